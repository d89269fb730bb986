package driver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/driver"
)

// fakeDriver records the calls that reach it and keeps files in a map.
type fakeDriver struct {
	caps   backend.Capabilities
	calls  []string
	files  map[string][]byte
	closes int
}

func newFake() *fakeDriver {
	return &fakeDriver{files: map[string][]byte{}, caps: backend.Capabilities{MaxNameBytes: 20, MaxElemBytes: 8}}
}

func (d *fakeDriver) call(op string)                     { d.calls = append(d.calls, op) }
func (d *fakeDriver) Capabilities() backend.Capabilities { return d.caps }
func (d *fakeDriver) Mkdir(context.Context, string) error {
	d.call("Mkdir")
	return nil
}

func (d *fakeDriver) Stat(_ context.Context, name string) (backend.Info, error) {
	d.call("Stat")
	data, ok := d.files[name]
	if !ok {
		return backend.Info{}, fs.ErrNotExist
	}
	return backend.Info{Name: name, Size: int64(len(data))}, nil
}

func (d *fakeDriver) List(context.Context, string) ([]backend.Info, error) {
	d.call("List")
	return []backend.Info{{Name: "b"}, {Name: ".~tmp"}, {Name: "a"}}, nil
}

func (d *fakeDriver) OpenRange(_ context.Context, name string, off, n int64) (io.ReadCloser, error) {
	d.call("OpenRange")
	data, ok := d.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	data = data[min(off, int64(len(data))):]
	if n >= 0 && n < int64(len(data)) {
		data = data[:n]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (d *fakeDriver) WriteFrom(_ context.Context, name string, r io.Reader) (int64, error) {
	d.call("WriteFrom")
	data, err := io.ReadAll(r)
	d.files[name] = data
	return int64(len(data)), err
}

func (d *fakeDriver) OpenWriter(context.Context, string, backend.WriterOptions) (backend.Writer, error) {
	d.call("OpenWriter")
	return nopWriter{}, nil
}

func (d *fakeDriver) Unlink(context.Context, string) error {
	d.call("Unlink")
	return backend.PathErr("whatever", "f", errors.New("boom"))
}

func (d *fakeDriver) Close() error { d.closes++; return nil }

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriter) Sync() error                 { return nil }
func (nopWriter) Close() error                { return nil }

// fileWriterDriver adds the WriteFile fast path.
type fileWriterDriver struct{ *fakeDriver }

func (d fileWriterDriver) WriteFile(_ context.Context, name string, data []byte) error {
	d.call("WriteFile")
	d.files[name] = data
	return nil
}

// TestPortable checks what the portable layer does for every driver: names
// and limits, Close and ctx before any driver call, errors that name the op
// and path, derived calls and fast paths found on the driver.
func TestPortable(t *testing.T) {
	ctx := t.Context()
	d := newFake()
	p := driver.NewPortable(d)

	// Refused before the driver sees anything.
	for _, name := range []string{"../x", "a//b", ".~seg/x", "toolongelement", strings.Repeat("a/", 11) + "a"} {
		if err := p.WriteFile(ctx, name, nil); !errors.Is(err, backend.ErrInvalidPath) {
			t.Errorf("WriteFile(%q) = %v, want ErrInvalidPath", name, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Stat(cctx, "f"); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a done ctx = %v", err)
	}
	if err := p.EnsureDir(ctx, "."); err != nil {
		t.Errorf("EnsureDir(.) = %v", err)
	}
	if len(d.calls) != 0 {
		t.Fatalf("calls reached the driver: %v", d.calls)
	}

	// Derived: WriteFile through WriteFrom, ReadFile and ReadPrefix
	// through ranged reads.
	if err := p.WriteFile(ctx, "f", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got, err := p.ReadFile(ctx, "f"); err != nil || string(got) != "hello" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	if got, err := p.ReadPrefix(ctx, "f", 3); err != nil || string(got) != "hel" {
		t.Errorf("ReadPrefix = %q, %v", got, err)
	}
	if _, err := p.ReadPrefix(ctx, "f", -1); !errors.Is(err, backend.ErrInvalidRange) {
		t.Errorf("ReadPrefix(-1) = %v", err)
	}
	if want := "WriteFrom OpenRange OpenRange"; strings.Join(d.calls, " ") != want {
		t.Errorf("driver calls %v, want %s", d.calls, want)
	}

	// Errors name the op and the path; a path the driver named stays.
	var pe *fs.PathError
	if err := p.Unlink(ctx, "f"); !errors.As(err, &pe) || pe.Op != "unlink" || pe.Path != "f" {
		t.Errorf("Unlink = %#v", err)
	}
	// Rename without a Renamer copies, then unlinks the source: the
	// unlink's error names the source.
	if err := p.Rename(ctx, "f", "g"); !errors.As(err, &pe) || pe.Op != "rename" || pe.Path != "f" {
		t.Errorf("Rename = %#v", err)
	}
	if got, err := p.ReadFile(ctx, "g"); err != nil || string(got) != "hello" {
		t.Errorf("renamed file: %q, %v", got, err)
	}
	if _, err := p.OpenRange(ctx, "nope", 0, 1); !errors.As(err, &pe) || pe.Op != "open" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenRange of a missing file = %v", err)
	}

	// List: sorted, reserved names left out.
	var names []string
	for info, err := range p.List(ctx, ".") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, info.Name)
	}
	if strings.Join(names, " ") != "a b" {
		t.Errorf("List = %v", names)
	}

	// Without the optional interfaces: no locks, CreateFile looks first,
	// Compact does nothing.
	if _, err := p.Lock(ctx, "lk", false); !errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("Lock = %v", err)
	}
	if err := p.CreateFile(ctx, "f", nil); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateFile of a present file = %v", err)
	}
	if err := backend.Compact(ctx, p, "f"); err != nil {
		t.Errorf("Compact = %v", err)
	}

	// A writer used after its Close.
	w, err := p.OpenWriter(ctx, "w", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, backend.ErrClosed) || !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Close = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}

	// Close: once to the driver, then every call is ErrClosed.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil || d.closes != 1 {
		t.Errorf("second Close = %v; driver closed %d times", err, d.closes)
	}
	n := len(d.calls)
	if _, err := p.ReadFile(ctx, "f"); !errors.Is(err, backend.ErrClosed) || len(d.calls) != n {
		t.Errorf("ReadFile after Close = %v", err)
	}

	// The WriteFile fast path, where the driver has it.
	fd := fileWriterDriver{newFake()}
	if err := driver.NewPortable(fd).WriteFile(ctx, "f", []byte("x")); err != nil || strings.Join(fd.calls, " ") != "WriteFile" {
		t.Errorf("WriteFile on a FileWriter: %v, calls %v", err, fd.calls)
	}
}
