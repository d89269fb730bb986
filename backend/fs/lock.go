package fs

import (
	"context"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
	"github.com/trovekit/trove/backend"
)

// Lock takes the exclusive lock called name, kept in the file name (created
// 0600 if missing, never removed: removing a lock file lets two holders lock
// two different files).
//
// Within one Storage, goroutines queue on a channel. On the OS the holder
// then takes a flock(2) on its own open file description, which excludes
// other processes and other Storage values of this process alike; a waiting
// Lock polls for that one.
func (s *fsDriver) Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error) {
	if err := s.ensureLockFile(name); err != nil {
		return nil, classify(err)
	}
	local, err := s.locks.Acquire(ctx, name, wait, nil)
	if err != nil {
		return nil, err
	}
	l := &lock{local: local}
	if s.os {
		fl, err := s.flock(ctx, name, wait)
		if err != nil {
			_ = local.Unlock()
			return nil, classify(err)
		}
		l.fl = fl
	}
	return l, nil
}

// ensureLockFile creates the lock file through the tree, so it is never
// created outside the root, and refuses a directory.
func (s *fsDriver) ensureLockFile(name string) error {
	fi, err := s.t.stat(name)
	if notExist(err) {
		if err := s.mkdirAll(backend.Dir(name)); err != nil {
			return err
		}
		f, err := s.t.openFile(name, os.O_RDONLY|os.O_CREATE, filePerm)
		if err != nil {
			return err
		}
		if fi, err = f.Stat(); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if fi.IsDir() {
		return isDir(name)
	}
	return nil
}

// flock locks the file at name. flock opens it by absolute path, so the
// locked file is then checked to be the one the root resolves name to: that
// catches both a symlink swapped in to lead elsewhere and a lock file that
// was replaced between open and lock.
func (s *fsDriver) flock(ctx context.Context, name string, wait bool) (*flock.Flock, error) {
	abs := filepath.Join(s.abs, filepath.FromSlash(name))
	for {
		// No O_CREATE: flock must not create anything the root did not.
		fl := flock.New(abs, flock.SetFlag(os.O_RDONLY))
		var ok bool
		var err error
		if wait {
			ok, err = fl.TryLockContext(ctx, s.poll)
		} else {
			ok, err = fl.TryLock()
		}
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, backend.ErrLocked
		}
		held, herr := fl.Stat()
		want, werr := s.t.stat(name)
		if herr == nil && werr == nil && os.SameFile(held, want) {
			return fl, nil
		}
		_ = fl.Unlock()
		if werr != nil && !notExist(werr) {
			return nil, werr
		}
		if herr != nil {
			return nil, herr
		}
		if err := s.ensureLockFile(name); err != nil {
			return nil, err
		}
	}
}

type lock struct {
	local backend.Unlocker
	fl    *flock.Flock
}

// Unlock releases the lock (the portable layer calls it once).
func (l *lock) Unlock() error {
	var err error
	if l.fl != nil {
		err = l.fl.Unlock()
	}
	_ = l.local.Unlock()
	return err
}
