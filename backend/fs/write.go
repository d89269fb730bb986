package fs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/spf13/afero"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/stage"
)

// copyChunk bounds how much is written between two looks at ctx.
const copyChunk = 256 << 10

// Mkdir creates dir and its missing parents (0700), durably.
func (s *fsDriver) Mkdir(_ context.Context, dir string) error { return classify(s.mkdirAll(dir)) }

// mkdirAll creates dir and its missing parents top down, fsyncing the parent
// of each new directory so its entry survives a crash. It never relies on the
// Fs to create parents: MemMapFs would happily create them under a file.
func (s *fsDriver) mkdirAll(dir string) error {
	if dir == "." {
		return nil
	}
	fi, err := s.t.stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return notDir(dir)
		}
		return nil
	}
	if !notExist(err) {
		return err
	}
	create := false // once one level is missing, all below it are
	for _, p := range append(backend.Parents(dir), dir) {
		if !create {
			fi, err := s.t.stat(p)
			switch {
			case err == nil && fi.IsDir():
				continue
			case err == nil:
				return notDir(p)
			case !notExist(err):
				return err
			}
			create = true
		}
		if err := s.t.mkdir(p, dirPerm); err != nil {
			if !errors.Is(err, iofs.ErrExist) {
				return err
			}
			// Lost a race: fine if it is a directory. Its creator may not
			// have synced the parent yet, so we still do.
			if fi, err := s.t.stat(p); err != nil || !fi.IsDir() {
				return notDir(p)
			}
		}
		if err := s.syncDir(backend.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs a directory so the entries created or renamed in it are
// durable. Fs without durability get a cheap no-op Sync.
func (s *fsDriver) syncDir(dir string) error {
	d, err := s.t.openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// checkTarget refuses to write or rename over name when it is a directory or
// a symlink out of the root. (Renaming over an in-root symlink replaces the
// link, as rename(2) does.) It reports whether name exists, which proves its
// parent does.
func (s *fsDriver) checkTarget(name string) (exists bool, err error) {
	fi, err := s.t.lstat(name)
	switch {
	case notExist(err):
		return false, nil
	case err != nil:
		return false, err
	case fi.IsDir():
		return true, isDir(name)
	case fi.Mode()&iofs.ModeSymlink != 0:
		if _, err := s.t.stat(name); err != nil && !notExist(err) {
			return true, err
		}
	}
	return true, nil
}

// createTemp creates an empty temp file (0600) in the temp directory.
func (s *fsDriver) createTemp() (afero.File, string, error) {
	for range 8 {
		name := fmt.Sprintf("%s/%016x", tempDir, rand.Uint64())
		f, err := s.t.openFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		if notExist(err) {
			// No temp dir yet (or it was removed). Its own entry need not
			// be durable: a temp is never needed after a crash.
			if err := s.t.mkdir(tempDir, dirPerm); err != nil && !errors.Is(err, iofs.ErrExist) {
				return nil, "", err
			}
			f, err = s.t.openFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		}
		if errors.Is(err, iofs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return f, name, nil
	}
	return nil, "", errors.New("cannot create a unique temp file")
}

// WriteFile is the driver.FileWriter fast path: the bytes written as they
// are, without a copy through a buffer.
func (s *fsDriver) WriteFile(ctx context.Context, name string, data []byte) error {
	_, err := s.replace(ctx, name, func(f afero.File) (int64, error) { return writeAll(ctx, f, data) })
	return err
}

// writeAll writes data to f a chunk at a time, looking at ctx between.
func writeAll(ctx context.Context, f afero.File, data []byte) (int64, error) {
	var n int64
	for len(data) > 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, err := f.Write(data[:min(len(data), copyChunk)])
		n += int64(k)
		if err != nil {
			return n, err
		}
		data = data[k:]
	}
	return n, nil
}

// WriteFrom copies r to name atomically and durably, without buffering the
// whole content. It does not close r.
func (s *fsDriver) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	return s.replace(ctx, name, func(f afero.File) (int64, error) {
		buf := make([]byte, copyChunk)
		var n int64
		for {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			k, rerr := r.Read(buf)
			if k > 0 {
				w, err := f.Write(buf[:k])
				n += int64(w)
				if err != nil {
					return n, err
				}
			}
			if rerr == io.EOF {
				return n, nil
			}
			if rerr != nil {
				return n, fmt.Errorf("reading the source: %w", rerr)
			}
		}
	})
}

// replace is the atomic write: temp file, fill, fsync, close, rename over
// name, fsync name's directory. On any failure, including a cancelled ctx,
// the temp is removed and name keeps its old content.
func (s *fsDriver) replace(ctx context.Context, name string, fill func(afero.File) (int64, error)) (n int64, err error) {
	st, n, err := s.stage(name, fill)
	if err != nil {
		return n, classify(err)
	}
	return n, st.Commit(ctx)
}

// Stage is the driver.FileStager fast path: replace up to the rename. The
// temporary file is written and synced now; Commit renames it over name
// and syncs the directory, so files staged at once are synced together.
func (s *fsDriver) Stage(ctx context.Context, name string, data []byte) (stage.Staged, error) {
	st, _, err := s.stage(name, func(f afero.File) (int64, error) { return writeAll(ctx, f, data) })
	return st, classify(err)
}

// stage writes what fill writes to a synced, closed temporary file, after
// the checks of a write to name; the temp is removed on failure.
func (s *fsDriver) stage(name string, fill func(afero.File) (int64, error)) (st *staged, n int64, err error) {
	exists, err := s.checkTarget(name)
	if err != nil {
		return nil, 0, err
	}
	dir := backend.Dir(name)
	if !exists {
		if err := s.mkdirAll(dir); err != nil {
			return nil, 0, err
		}
	}
	f, tmp, err := s.createTemp()
	if err != nil {
		return nil, 0, err
	}
	st = &staged{s: s, tmp: tmp, name: name}
	if n, err = fill(f); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.Abort()
		return nil, n, err
	}
	return st, n, nil
}

// staged is a synced temporary file waiting to be renamed over name.
type staged struct {
	s         *fsDriver
	tmp, name string
	done      bool // committed or aborted
}

// Commit renames the temporary file over name and syncs name's directory.
// A cancelled ctx, or a directory at name now, removes the temp and leaves
// name as it was.
func (st *staged) Commit(ctx context.Context) error {
	if st.done {
		return backend.PathErr("write", st.name, backend.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		st.Abort()
		return err // last moment to keep the old content
	}
	if _, err := st.s.checkTarget(st.name); err != nil {
		st.Abort()
		return classify(err)
	}
	if err := st.s.t.rename(st.tmp, st.name); err != nil {
		st.Abort()
		return classify(err)
	}
	st.done = true
	return classify(st.s.syncDir(backend.Dir(st.name)))
}

// Abort removes the temporary file; after Commit it does nothing.
func (st *staged) Abort() {
	if st.done {
		return
	}
	st.done = true
	if err := st.s.t.remove(st.tmp); err != nil && !notExist(err) {
		st.s.log.Warn("trove/fs: removing temp file", "name", st.tmp, "err", err)
	}
}

// OpenWriter opens name for appending (0600, parents created).
func (s *fsDriver) OpenWriter(_ context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	f, created, err := s.openAppend(name, opt)
	if err != nil {
		return nil, classify(err)
	}
	// MemMapFs opens a directory for writing; refuse it like the OS does.
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		_ = f.Close()
		if err == nil {
			err = isDir(name)
		}
		return nil, classify(err)
	}
	return &writer{s: s, name: name, f: f, created: created, over: opt.Truncate && opt.Overwrite && !opt.Exclusive}, nil
}

// openAppend opens or creates name and says whether it created it, which
// decides whether the first Sync must also fsync the directory. An existing
// file is tried first, the common case for appends, and needs no look at the
// parents; a create is exclusive so that a concurrent creator is noticed and
// we retry as existing.
func (s *fsDriver) openAppend(name string, opt backend.WriterOptions) (afero.File, bool, error) {
	flag := os.O_WRONLY | os.O_APPEND
	switch {
	case opt.Truncate && opt.Overwrite && !opt.Exclusive:
		flag = os.O_WRONLY // written from the start, cut at Sync and Close
	case opt.Truncate && !opt.Exclusive:
		flag |= os.O_TRUNC
	}
	for range 4 {
		if !opt.Exclusive {
			f, err := s.t.openFile(name, flag, 0)
			if !notExist(err) {
				return f, false, err
			}
		}
		if err := s.mkdirAll(backend.Dir(name)); err != nil {
			return nil, false, err
		}
		f, err := s.t.openFile(name, flag|os.O_CREATE|os.O_EXCL, filePerm)
		if opt.Exclusive || !errors.Is(err, iofs.ErrExist) {
			return f, err == nil, err
		}
	}
	return nil, false, errors.New("file keeps appearing and disappearing")
}

// writer appends to one file. Writes go straight to the file (no buffer), so
// each Write is one append and readers see it at once.
type writer struct {
	s         *fsDriver
	name      string
	f         afero.File
	created   bool // the directory entry still needs an fsync
	dirSynced bool
	over      bool  // Overwrite: writes from offset 0, cut at off
	off       int64 // bytes written, with over
}

func (w *writer) Write(p []byte) (int, error) {
	var n int
	var err error
	if w.over {
		n, err = w.f.WriteAt(p, w.off)
		w.off += int64(n)
		return n, classify(err)
	}
	if w.s.os {
		n, err = w.f.Write(p)
	} else {
		// Not every Fs honours O_APPEND (MemMapFs seeks once at open), so
		// seek to the end under a lock shared by this Storage's writers.
		w.s.appendM.Lock()
		if _, err = w.f.Seek(0, io.SeekEnd); err == nil {
			n, err = w.f.Write(p)
		}
		w.s.appendM.Unlock()
	}
	return n, classify(err)
}

// Sync syncs the file and, the first time, its new directory entry, both
// at once: neither needs the other first, and concurrent fsyncs share a
// journal commit (a pack written in place waits for both before its
// index, see cas).
func (w *writer) Sync() error {
	if err := w.cut(); err != nil {
		return err
	}
	if !w.created || w.dirSynced {
		return classify(w.f.Sync())
	}
	var derr error
	var wg sync.WaitGroup
	wg.Go(func() { derr = w.s.syncDir(backend.Dir(w.name)) })
	err := w.f.Sync()
	wg.Wait()
	if err = cmp.Or(err, derr); err != nil {
		return classify(err)
	}
	w.dirSynced = true
	return nil
}

func (w *writer) Close() error {
	err := w.cut()
	return cmp.Or(err, classify(w.f.Close()))
}

// cut drops the old bytes past those an Overwrite writer wrote.
func (w *writer) cut() error {
	if !w.over {
		return nil
	}
	return classify(w.f.Truncate(w.off))
}

// Rename moves the file from to to, replacing to atomically, and makes the
// move durable. Directories are not renamed (ErrIsDir): the contract moves
// files, and not every backend can move a tree.
func (s *fsDriver) Rename(_ context.Context, from, to string) error {
	const op = "rename"
	fi, err := s.t.lstat(from)
	if err != nil {
		return missing(err)
	}
	if fi.IsDir() {
		return isDir(from)
	}
	if fi.Mode()&iofs.ModeSymlink != 0 {
		if _, err := s.t.stat(from); err != nil && !notExist(err) {
			return classify(err)
		}
	}
	if from == to {
		return nil
	}
	exists, err := s.checkTarget(to)
	if err != nil {
		return backend.PathErr(op, to, classify(err))
	}
	if !exists {
		if err := s.mkdirAll(backend.Dir(to)); err != nil {
			return backend.PathErr(op, to, classify(err))
		}
	}
	if err := s.t.rename(from, to); err != nil {
		return missing(err)
	}
	if err := s.syncDir(backend.Dir(to)); err != nil {
		return backend.PathErr(op, to, classify(err))
	}
	if backend.Dir(from) != backend.Dir(to) {
		return classify(s.syncDir(backend.Dir(from)))
	}
	return nil
}

// Unlink removes a file or an empty directory. The removal is not fsynced:
// the contract does not promise a durable delete, and a file that reappears
// after a power loss is harmless where a lost one would not be.
func (s *fsDriver) Unlink(_ context.Context, name string) error {
	fi, err := s.t.lstat(name)
	if err != nil {
		return missing(err)
	}
	switch {
	case fi.Mode()&iofs.ModeSymlink != 0:
		// Removing the link itself touches nothing outside, but a link out
		// of the root is refused like every other use of it.
		if _, err := s.t.stat(name); err != nil && !notExist(err) {
			return classify(err)
		}
	case fi.IsDir() && !s.os:
		// MemMapFs removes a non-empty directory and orphans its children.
		if err := s.checkEmpty(name); err != nil {
			return classify(err)
		}
	}
	if err := s.t.remove(name); err != nil {
		if errors.Is(err, iofs.ErrExist) { // some systems say EEXIST for ENOTEMPTY
			err = withSentinel(err, backend.ErrNotEmpty)
		}
		return missing(err)
	}
	return nil
}

func (s *fsDriver) checkEmpty(dir string) error {
	d, err := s.t.openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if err != nil && err != io.EOF {
		return err
	}
	if len(names) > 0 {
		return withSentinel(fmt.Errorf("%s is not empty", dir), backend.ErrNotEmpty)
	}
	return nil
}
