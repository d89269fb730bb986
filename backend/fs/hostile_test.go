package fs_test

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"

	trovefs "github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/conformance"
)

// callCountingFs counts every call that reaches the file system.
type callCountingFs struct {
	afero.Fs
	calls atomic.Int64
}

func (c *callCountingFs) Create(name string) (afero.File, error) {
	c.calls.Add(1)
	return c.Fs.Create(name)
}
func (c *callCountingFs) Mkdir(name string, perm os.FileMode) error {
	c.calls.Add(1)
	return c.Fs.Mkdir(name, perm)
}
func (c *callCountingFs) MkdirAll(path string, perm os.FileMode) error {
	c.calls.Add(1)
	return c.Fs.MkdirAll(path, perm)
}
func (c *callCountingFs) Open(name string) (afero.File, error) {
	c.calls.Add(1)
	return c.Fs.Open(name)
}
func (c *callCountingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	c.calls.Add(1)
	return c.Fs.OpenFile(name, flag, perm)
}
func (c *callCountingFs) Remove(name string) error    { c.calls.Add(1); return c.Fs.Remove(name) }
func (c *callCountingFs) RemoveAll(path string) error { c.calls.Add(1); return c.Fs.RemoveAll(path) }
func (c *callCountingFs) Rename(o, n string) error    { c.calls.Add(1); return c.Fs.Rename(o, n) }
func (c *callCountingFs) Stat(name string) (os.FileInfo, error) {
	c.calls.Add(1)
	return c.Fs.Stat(name)
}
func (c *callCountingFs) Chmod(name string, mode os.FileMode) error {
	c.calls.Add(1)
	return c.Fs.Chmod(name, mode)
}
func (c *callCountingFs) Chown(name string, uid, gid int) error {
	c.calls.Add(1)
	return c.Fs.Chown(name, uid, gid)
}
func (c *callCountingFs) Chtimes(name string, a, m time.Time) error {
	c.calls.Add(1)
	return c.Fs.Chtimes(name, a, m)
}

// A hostile name is refused before any call reaches the file system.
func TestHostileNamesReachNoFile(t *testing.T) {
	fsys := &callCountingFs{Fs: afero.NewMemMapFs()}
	st, err := trovefs.New(fsys, "/trove")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conformance.HostileUnreached(t, st, fsys.calls.Load)
}
