package checkpoint

import (
	"io"
	"io/fs"

	"github.com/trovekit/trove/checkpoint/statcache"
)

// Workspace is the directory tree checkpoints snapshot and rewind: the
// user's files, where mode bits, symlinks and inodes matter. Make one with
// Dir (a real directory, confined with os.Root) or FS (any afero.Fs).
//
// Every name it is given is a slash path relative to its root, validated by
// the caller; "." is the root.
type Workspace interface {
	// lstat describes name without following a final symlink.
	lstat(name string) (fileStat, error)
	// readDir lists dir with each entry described as by lstat, any order.
	readDir(dir string) ([]dirEntry, error)
	// statNames describes the named entries of dir as by lstat, leaving
	// out those that are gone: readDir for a listing known from the cache.
	// The result is appended to buf[:0], which the walk reuses.
	statNames(dir string, names []string, buf []dirEntry) ([]dirEntry, error)
	// readFile reads name, refusing (errTooBig) more than limit bytes
	// when limit >= 0, into buf's storage when it is big enough.
	readFile(name string, limit int64, buf []byte) ([]byte, error)
	// open streams a regular file.
	open(name string) (io.ReadCloser, error)
	readlink(name string) (string, error)
	mkdir(name string, perm fs.FileMode) error
	// remove deletes a file, a symlink or an empty directory.
	remove(name string) error
	symlink(target, name string) error
	// rename moves a file or symlink over another (never a directory).
	rename(from, to string) error
	// writeTemp writes what src yields, with perm (synced when asked),
	// to a new temporary file beside name and returns that file's name:
	// renaming it over name replaces name atomically (see writeAtomic). An
	// error (from src: a blob that fails verification) leaves no file.
	writeTemp(name string, src io.Reader, perm fs.FileMode, sync bool) (string, error)
	chmod(name string, perm fs.FileMode) error
	// syncDir makes the entries of dir durable.
	syncDir(dir string) error
	// dirMtimes reports whether directory mtimes and ctimes change when
	// entries are added or removed, as on every real file system (afero's
	// memory file system does not), so cached listings can be trusted.
	dirMtimes() bool
	// abs is the absolute path of the root, "" when it has none.
	abs() string
	// Close releases the workspace (the os.Root of Dir).
	Close() error
}

// fileStat is what the stat cache and the walk need of an lstat.
type fileStat = statcache.Stat

type dirEntry struct {
	name string
	st   fileStat
}

// tempPrefix starts the names of rewind's temporary files; the walk never
// snapshots them.
const tempPrefix = ".trove-tmp-"

func statOf(fi fs.FileInfo) fileStat {
	st := fileStat{Mode: fi.Mode(), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	sysStat(fi, &st)
	return st
}

// writeAtomic replaces name (a file, a symlink, or nothing) by a regular
// file with what src yields and perm, through a temporary file in the same
// directory and a rename, so no reader sees a partial file; an error from
// src leaves name as it was.
func writeAtomic(ws Workspace, name string, src io.Reader, perm fs.FileMode, sync bool) error {
	tmp, err := ws.writeTemp(name, src, perm, sync)
	if err != nil {
		return err
	}
	return moveInto(ws, tmp, name)
}

// moveInto renames the temporary file tmp to name; one that cannot take
// its place is removed.
func moveInto(ws Workspace, tmp, name string) error {
	if err := ws.rename(tmp, name); err != nil {
		_ = ws.remove(tmp)
		return err
	}
	return nil
}

// statNamesWith is statNames on top of lstat.
func statNamesWith(lstat func(string) (fileStat, error), dir string, names []string, buf []dirEntry) ([]dirEntry, error) {
	out := buf[:0]
	for _, n := range names {
		rel := n
		if dir != "." {
			rel = dir + "/" + n
		}
		st, err := lstat(rel)
		if isAbsent(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, dirEntry{name: n, st: st})
	}
	return out, nil
}
