package jsonl

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/mem"
)

func TestLineReader(t *testing.T) {
	type line struct {
		text     string
		complete bool
		tooLong  bool
	}
	cases := []struct {
		name string
		in   string
		max  int
		want []line
	}{
		{"empty", "", 10, nil},
		{"one", "abc\n", 10, []line{{"abc", true, false}}},
		{"no newline", "abc", 10, []line{{"abc", false, false}}},
		{"two", "a\nb\n", 10, []line{{"a", true, false}, {"b", true, false}}},
		{"exactly max", "0123456789\nx\n", 10, []line{{"0123456789", true, false}, {"x", true, false}}},
		{"over max", "0123456789A\nx\n", 10, []line{{"", true, true}, {"x", true, false}}},
		{"over max at end", "x\n0123456789AB", 10, []line{{"x", true, false}, {"", false, true}}},
		{"longer than the buffer", strings.Repeat("y", 100) + "\nz\n", 1000, []line{{strings.Repeat("y", 100), true, false}, {"z", true, false}}},
		{"over max and the buffer", strings.Repeat("y", 100) + "\nz\n", 50, []line{{"", true, true}, {"z", true, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A 16-byte buffer makes every long line cross ReadSlice's limit.
			lr := newReaderSize(strings.NewReader(c.in), 16, c.max)
			var got []line
			for {
				b, complete, err := lr.Next()
				if err == io.EOF {
					break
				}
				tooLong := errors.Is(err, ErrLineTooLong)
				if err != nil && !tooLong {
					t.Fatal(err)
				}
				got = append(got, line{string(b), complete, tooLong})
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("line %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestAppender(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	// Create refuses a file that exists, and latches that.
	must(t, st.WriteFile(ctx, "a.jsonl", []byte("{\"x\":1}\n{\"torn")))
	c := NewAppender(st, "a.jsonl", Create)
	if err := c.Write(ctx, []byte("{}\n")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create over a file: %v", err)
	}
	if err := c.Sync(); !errors.Is(err, fs.ErrExist) {
		t.Errorf("the error is not latched: %v", err)
	}
	// Append drops the torn tail first, and says how much.
	a := NewAppender(st, "a.jsonl", Append)
	dropped := 0
	a.Dropped = func(n int) { dropped = n }
	must(t, a.Write(ctx, []byte("{\"y\":2}\n")))
	must(t, a.Close())
	if b, _ := st.ReadFile(ctx, "a.jsonl"); string(b) != "{\"x\":1}\n{\"y\":2}\n" || dropped != 6 {
		t.Errorf("after append: %q, dropped %d", b, dropped)
	}
	if err := a.Write(ctx, []byte("{}\n")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
	// A failing write latches: later calls return the first error.
	ft := faulty.New(st, faulty.FailNth(1, errors.New("disk on fire"), "Writer.Write"))
	w := NewAppender(ft, "b.jsonl", Create)
	first := w.Write(ctx, []byte("{}\n"))
	if first == nil || w.Write(ctx, []byte("{}\n")) != first || w.Sync() != first || w.Err() != first {
		t.Errorf("not latched: %v", first)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
