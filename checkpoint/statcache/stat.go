package statcache

import "io/fs"

// Stat is what the stat cache and a walk need of an lstat.
type Stat struct {
	Mode  fs.FileMode
	Size  int64
	Mtime int64 // ns since the epoch
	Ctime int64 // ns since the epoch; 0 where the file system has none
	Ino   uint64
	Dev   uint64
}

// IsDir reports whether the stat is a directory's.
func (s Stat) IsDir() bool { return s.Mode.IsDir() }

// IsRegular reports whether the stat is a regular file's.
func (s Stat) IsRegular() bool { return s.Mode.IsRegular() }

// IsSymlink reports whether the stat is a symlink's.
func (s Stat) IsSymlink() bool { return s.Mode&fs.ModeSymlink != 0 }
