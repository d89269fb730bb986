//go:build linux

package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trovekit/trove/internal/beneath"
)

// On Linux the walk reads directories with raw system calls: one openat2
// confined to the root with no symlink anywhere in the path
// (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), getdents into a reused buffer and
// one fstatat per entry relative to the directory. os.Root.Open plus
// ReadDir costs several more calls per directory, and the stat pass is what
// bounds an incremental snapshot.

// readDirFast lists dir; ok is false when the kernel lacks openat2 and the
// caller must use the portable path.
func (w *dirWorkspace) readDirFast(dir string) (ents []dirEntry, ok bool, err error) {
	fd, err := w.fast.OpenFile(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0, true)
	if errors.Is(err, beneath.ErrUnsupported) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err // a symlink where the walk saw a directory included
	}
	defer unix.Close(fd)
	bp := w.bufs.Get().(*[]byte)
	defer w.bufs.Put(bp)
	buf := *bp
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			return nil, true, &fs.PathError{Op: "readdir", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	ents = make([]dirEntry, 0, len(names))
	for _, name := range names {
		var st unix.Stat_t
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			continue // removed while we listed
		}
		if err != nil {
			return nil, true, &fs.PathError{Op: "lstat", Path: dir + "/" + name, Err: err}
		}
		ents = append(ents, dirEntry{name: name, st: statFromUnix(&st)})
	}
	return ents, true, nil
}

// openFast opens a file for reading with one openat2 confined to the root
// with no symlink in the path; os.Root opens each parent in turn, which for
// the thousands of files of a first snapshot is most of the system calls.
// ok is false when the caller must use os.Root: no openat2, or a symlink
// in the path (os.Root follows those that stay inside the root).
func (w *dirWorkspace) openFast(name string) (*os.File, bool, error) {
	fd, err := w.fast.OpenFile(name, unix.O_RDONLY, 0, true)
	if beneath.Undecided(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return os.NewFile(uintptr(fd), name), true, nil
}

// statNamesFast stats dir's entries by path from the root descriptor: one
// fstatat each, no open, no getdents. Only metadata is read this way; a
// parent swapped for a symlink meanwhile changes the parent's own stat, and
// content is read through the os.Root.
func (w *dirWorkspace) statNamesFast(dir string, names []string, dst []dirEntry) ([]dirEntry, bool, error) {
	rootfd := w.fast.FD()
	if rootfd < 0 {
		return nil, false, nil
	}
	out := dst[:0]
	// One NUL-terminated path buffer for the whole directory, from the pool
	// of getdents buffers (a path never outgrows one): the stat pass is most
	// of an incremental snapshot, and a string per name (and its C copy)
	// was a fair part of it.
	bp := w.bufs.Get().(*[]byte)
	defer w.bufs.Put(bp)
	buf := (*bp)[:0]
	if dir != "." {
		buf = append(buf, dir...)
		buf = append(buf, '/')
	}
	prefix := len(buf)
	// Raw system calls while they prove quick (see rawEvery).
	raw := w.rawOK.Load() && w.rawNow()
	for i, n := range names {
		if strings.IndexByte(n, 0) >= 0 {
			continue // no such name on disk (a damaged cache): never a shorter path
		}
		buf = append(append(buf[:prefix], n...), 0)
		var st unix.Stat_t
		var err error
		if raw && (i+len(dir))%rawEvery == 0 {
			// Offset by the directory's path: of a small directory's
			// calls, not always the first.
			raw, err = w.timedRawStat(rootfd, buf, &st)
		} else {
			err = lstatAt(rootfd, buf, &st, raw)
		}
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				continue
			}
			return nil, true, &fs.PathError{Op: "lstat", Path: string(buf[:len(buf)-1]), Err: err}
		}
		out = append(out, dirEntry{name: n, st: statFromUnix(&st)})
	}
	return out, true, nil
}

// Where WithRawStats asks, the stat pass makes its calls raw (see
// lstatAt): the scheduler's bookkeeping around a system call, and the
// handoffs of Ps and wakeups of threads it leads to in a process that
// makes little but system calls, cost more CPU per stat than the kernel's
// own work for an inode it has cached (~0.4 of ~2 us a call, measured). A
// stat that reads the disk holds its P while it waits: one call in
// rawEvery is timed, and once rawSlowRun timed in a row took over rawSlow
// the workspace makes ordinary calls for rawPause, so a cold cache costs
// a few calls. A call alone is timed, not a group of them: a goroutine
// waits for its P for milliseconds while the garbage collector has it. One
// slow call alone (the machine busy) changes nothing.
const (
	rawEvery = 8
	rawSlow  = 50 * time.Microsecond
	rawPause = time.Second
	// rawSlowRun is how many slow calls in a row make ordinary calls.
	rawSlowRun = 3
)

// timedRawStat is a raw lstatAt, timed; it returns whether the next calls
// may be raw too.
func (w *dirWorkspace) timedRawStat(dirfd int, path []byte, st *unix.Stat_t) (bool, error) {
	t0 := time.Since(w.born)
	err := lstatAt(dirfd, path, st, true)
	now := time.Since(w.born)
	return w.rawTook(now-t0, now), err
}

// rawTook counts a raw stat that took d, ending at now (a time since
// w.born), and reports whether the next may be raw too.
func (w *dirWorkspace) rawTook(d, now time.Duration) bool {
	if d <= rawSlow {
		if w.slowStats.Load() != 0 {
			w.slowStats.Store(0)
		}
		return true
	}
	if w.slowStats.Add(1) < rawSlowRun {
		return true
	}
	w.slowStats.Store(0)
	w.rawAfter.Store(int64(now + rawPause))
	w.rawOff.Store(true)
	return false
}

// rawNow reports whether stats are made raw now: the clock is read only
// while they are not.
func (w *dirWorkspace) rawNow() bool {
	if !w.rawOff.Load() {
		return true
	}
	if time.Since(w.born) < time.Duration(w.rawAfter.Load()) {
		return false
	}
	w.rawOff.Store(false)
	return true
}

// statFromUnix converts as os.Lstat does, so stats from either path compare
// equal in the stat cache.
func statFromUnix(s *unix.Stat_t) fileStat {
	mode := fs.FileMode(s.Mode & 0o777)
	switch s.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if s.Mode&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if s.Mode&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if s.Mode&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return fileStat{
		Mode:  mode,
		Size:  s.Size,
		Mtime: s.Mtim.Sec*1e9 + s.Mtim.Nsec,
		Ctime: s.Ctim.Sec*1e9 + s.Ctim.Nsec,
		Ino:   s.Ino,
		Dev:   s.Dev,
	}
}
