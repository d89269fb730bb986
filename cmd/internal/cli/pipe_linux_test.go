package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	growPipe(w, 1<<20)
	after, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("/proc/sys/fs/pipe-max-size")
	limit, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	if after <= before && limit >= 1<<20 {
		t.Fatalf("pipe buffer %d bytes after growPipe, %d before", after, before)
	}
	// Not a pipe: left alone, nothing written.
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f, 1<<20)
	growPipe(&bytes.Buffer{}, 1<<20)
	if fi, err := f.Stat(); err != nil || fi.Size() != 0 {
		t.Fatalf("a file after growPipe: %v, %v", fi, err)
	}
}
