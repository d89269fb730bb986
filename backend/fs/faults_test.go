package fs_test

import (
	"context"
	iofs "io/fs"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/trovekit/trove/backend"
)

// faultyFs is a MemMapFs whose writes, syncs and renames fail on demand.
type faultyFs struct {
	afero.Fs
	mu                           sync.Mutex
	writeErr, syncErr, renameErr error
}

func (f *faultyFs) set(write, sync, rename error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr, f.syncErr, f.renameErr = write, sync, rename
}

func (f *faultyFs) get() (write, sync, rename error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writeErr, f.syncErr, f.renameErr
}

func (f *faultyFs) OpenFile(name string, flag int, perm iofs.FileMode) (afero.File, error) {
	file, err := f.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *faultyFs) Rename(from, to string) error {
	if _, _, err := f.get(); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return f.Fs.Rename(from, to)
}

type faultyFile struct {
	afero.File
	fs *faultyFs
}

// Write fails half way, as a full disk does.
func (f *faultyFile) Write(p []byte) (int, error) {
	if err, _, _ := f.fs.get(); err != nil {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &iofs.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.File.Write(p)
}

func (f *faultyFile) Sync() error {
	if _, err, _ := f.fs.get(); err != nil {
		return &iofs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	ffs := &faultyFs{Fs: afero.NewMemMapFs()}
	s := openMem(t, ffs, "/r")
	mustWrite(t, s, "d/f", "old")
	temps := func() int {
		infos, err := afero.ReadDir(ffs.Fs, "/r/.~tmp")
		if err != nil {
			t.Fatal(err)
		}
		return len(infos)
	}
	for _, c := range []struct {
		name                string
		write, sync, rename error
		want                error
	}{
		{"ENOSPC on write", syscall.ENOSPC, nil, nil, syscall.ENOSPC},
		{"EIO on sync", nil, syscall.EIO, nil, syscall.EIO},
		{"rename fails", nil, nil, syscall.EIO, syscall.EIO},
	} {
		t.Run(c.name, func(t *testing.T) {
			ffs.set(c.write, c.sync, c.rename)
			err := s.WriteFile(ctx, "d/f", []byte("new content"))
			ffs.set(nil, nil, nil)
			wantErr(t, err, "write", "d/f", c.want)
			if got := mustRead(t, s, "d/f"); got != "old" {
				t.Errorf("d/f = %q after a failed write", got)
			}
			if n := temps(); n != 0 {
				t.Errorf("%d temp files left", n)
			}
		})
	}

	w, err := s.OpenWriter(ctx, "d/log", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ffs.set(syscall.ENOSPC, syscall.EIO, nil)
	_, werr := w.Write([]byte("0123456789"))
	serr := w.Sync()
	ffs.set(nil, nil, nil)
	wantErr(t, werr, "write", "d/log", syscall.ENOSPC)
	wantErr(t, serr, "sync", "d/log", syscall.EIO)
	if err := w.Sync(); err != nil {
		t.Errorf("Sync after the fault cleared: %v", err)
	}
}
