package spy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/backend/sub"
)

var ctx = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ops(calls []spy.Call) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.Op + " " + c.Name)
		if c.To != "" {
			b.WriteString(">" + c.To)
		}
		if c.N != 0 {
			fmt.Fprintf(&b, " %d", c.N)
		}
		if c.Err != nil {
			b.WriteString(" !")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestRecordsEveryCall(t *testing.T) {
	inner := mem.New()
	s := spy.New(inner)
	if s.Inner() != inner || s.Capabilities() != inner.Capabilities() {
		t.Fatal("not passed through")
	}
	must(t, s.EnsureDir(ctx, "d"))
	must(t, s.WriteFile(ctx, "d/f", []byte("hello")))
	_, err := s.WriteFrom(ctx, "d/g", strings.NewReader("abc"))
	must(t, err)
	w, err := s.OpenWriter(ctx, "d/w", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("xy"))
	must(t, err)
	must(t, w.Sync())
	must(t, w.Close())
	_, err = s.Stat(ctx, "d/f")
	must(t, err)
	_, err = s.ReadFile(ctx, "d/f")
	must(t, err)
	_, err = s.ReadPrefix(ctx, "d/f", 2)
	must(t, err)
	rc, err := s.OpenRange(ctx, "d/f", 1, 2)
	must(t, err)
	_, err = io.ReadAll(rc)
	must(t, err)
	must(t, rc.Close())
	for range s.List(ctx, "d") {
	}
	must(t, s.Rename(ctx, "d/g", "d/h"))
	must(t, s.Unlink(ctx, "d/h"))
	_, err = s.Open(ctx, "missing")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	u, err := s.Lock(ctx, "l", false)
	must(t, err)
	must(t, u.Unlock())
	s.Crash()
	must(t, s.Close())

	want := `Capabilities 
EnsureDir d
WriteFile d/f 5
WriteFrom d/g 3
OpenWriter d/w
Writer.Write d/w 2
Writer.Sync d/w
Writer.Close d/w
Stat d/f
ReadFile d/f 5
ReadPrefix d/f 2
OpenRange d/f
Reader.Read d/f 2
Reader.Read d/f !
Reader.Close d/f
List d 3
Rename d/g>d/h
Unlink d/h
Open missing !
Lock l
Unlocker.Unlock l
Crash 
Close 
`
	if got := ops(s.Calls()); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if s.Count() != 23 || s.Count("Writer.Write", "WriteFile") != 2 || s.Count("nothing") != 0 {
		t.Errorf("counts %d %d", s.Count(), s.Count("Writer.Write", "WriteFile"))
	}
	var muts []string
	for _, c := range s.Mutations() {
		muts = append(muts, c.Op)
	}
	if got := strings.Join(muts, " "); got != "EnsureDir WriteFile WriteFrom OpenWriter Writer.Write Rename Unlink" {
		t.Errorf("mutations: %s", got)
	}
	s.Reset()
	if len(s.Calls()) != 0 || s.Count() != 0 {
		t.Error("Reset kept calls")
	}
}

func TestCallsIsACopy(t *testing.T) {
	s := spy.New(mem.New())
	must(t, s.EnsureDir(ctx, "a"))
	calls := s.Calls()
	calls[0].Name = "changed"
	if s.Calls()[0].Name != "a" {
		t.Error("Calls aliases the record")
	}
	if got := calls[0].String(); got != "EnsureDir changed" {
		t.Errorf("String = %q", got)
	}
	r := spy.Call{Op: "Rename", Name: "a", To: "b", N: 3, Err: errors.New("x")}
	if r.String() != "Rename a -> b n=3: x" {
		t.Errorf("String = %q", r.String())
	}
}

func TestListRecordedWhenIterationEnds(t *testing.T) {
	s := spy.New(mem.New())
	for _, n := range []string{"a", "b", "c"} {
		must(t, s.WriteFile(ctx, n, nil))
	}
	s.Reset()
	seq := s.List(ctx, ".")
	if s.Count() != 0 {
		t.Error("recorded before iterating")
	}
	for range seq {
		break
	}
	for range s.List(ctx, "missing") {
	}
	if got := ops(s.Calls()); got != "List . 1\nList missing !\n" {
		t.Errorf("calls:\n%s", got)
	}
}

func TestNilInner(t *testing.T) {
	s := spy.New(nil)
	if s.Capabilities() != (backend.Capabilities{}) {
		t.Error("capabilities of nothing")
	}
	errs := []error{
		s.EnsureDir(ctx, "d"),
		s.WriteFile(ctx, "f", nil),
		s.Rename(ctx, "f", "g"),
		s.Unlink(ctx, "f"),
	}
	_, err := s.Stat(ctx, "f")
	errs = append(errs, err)
	_, err = s.ReadFile(ctx, "f")
	errs = append(errs, err)
	_, err = s.ReadPrefix(ctx, "f", 1)
	errs = append(errs, err)
	_, err = s.Open(ctx, "f")
	errs = append(errs, err)
	_, err = s.OpenRange(ctx, "f", 0, 1)
	errs = append(errs, err)
	_, err = s.WriteFrom(ctx, "f", strings.NewReader("x"))
	errs = append(errs, err)
	_, err = s.OpenWriter(ctx, "f", backend.WriterOptions{})
	errs = append(errs, err)
	_, err = s.Lock(ctx, "f", true)
	errs = append(errs, err)
	for _, err := range s.List(ctx, ".") {
		errs = append(errs, err)
	}
	for i, err := range errs {
		var pe *fs.PathError
		if !errors.Is(err, backend.ErrNotSupported) || !errors.As(err, &pe) {
			t.Errorf("call %d: %v", i, err)
		}
	}
	s.Crash()
	must(t, s.Close())
	if s.Count() != len(errs)+3 {
		t.Errorf("recorded %d calls", s.Count())
	}
}

// TestHostilePathNeverReachesBackend shows the intended use: a layer that
// validates names must not pass a hostile one to its store.
func TestHostilePathNeverReachesBackend(t *testing.T) {
	s := spy.New(mem.New())
	sb, err := sub.New(s, "root")
	must(t, err)
	for _, name := range []string{"../etc/passwd", "/abs", "a\\b", "a/../../b", ""} {
		if err := sb.WriteFile(ctx, name, []byte("x")); !errors.Is(err, backend.ErrInvalidPath) {
			t.Errorf("%q: %v", name, err)
		}
		if _, err := sb.ReadFile(ctx, name); !errors.Is(err, backend.ErrInvalidPath) {
			t.Errorf("%q: %v", name, err)
		}
	}
	if s.Count() != 0 {
		t.Errorf("reached the backend: %v", s.Calls())
	}
}

func TestConcurrentRecording(t *testing.T) {
	s := spy.New(mem.New())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("g%d/%d", g, i)
				if err := s.WriteFile(ctx, name, []byte(name)); err != nil {
					t.Error(err)
				}
				if _, err := s.ReadFile(ctx, name); err != nil {
					t.Error(err)
				}
				_ = s.Calls()
			}
		})
	}
	wg.Wait()
	if s.Count("WriteFile") != 400 || s.Count("ReadFile") != 400 || len(s.Mutations()) != 400 {
		t.Errorf("counts %d %d", s.Count("WriteFile"), s.Count("ReadFile"))
	}
}
