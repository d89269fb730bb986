package conformance

import (
	"bytes"
	"io"
	"math"
	"testing"
	"testing/iotest"
	"time"

	"github.com/trovekit/trove/backend"
)

func testRead(t *testing.T, nb newStorage) {
	t.Run("Open/stream", func(t *testing.T) {
		s := nb(t)
		data := pattern(100<<10+3, 1)
		mustWrite(t, s, "f", data)
		rc, err := s.Open(t.Context(), "f")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer rc.Close()
		// iotest.TestReader checks Read (and Seek, ReadAt if offered).
		if err := iotest.TestReader(rc, data); err != nil {
			t.Errorf("Open(f) reader: %v", err)
		}
	})
	t.Run("Open/close-unread", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", pattern(100<<10, 1))
		rc, err := s.Open(t.Context(), "f")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := rc.Close(); err != nil {
			t.Errorf("Close of an unread reader: %v", err)
		}
	})
	t.Run("Open/replaced-while-open", func(t *testing.T) {
		// A reader opened before a replace reads one version whole (or
		// fails), never the start of one and the end of the other.
		s := nb(t)
		oldV, newV := bytes.Repeat([]byte("o"), 256<<10), bytes.Repeat([]byte("n"), 300<<10)
		mustWrite(t, s, "f", oldV)
		rc, err := s.Open(t.Context(), "f")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer rc.Close()
		head := make([]byte, 1024)
		if _, err := io.ReadFull(rc, head); err != nil {
			t.Fatalf("reading the head: %v", err)
		}
		mustWrite(t, s, "f", newV)
		rest, err := io.ReadAll(rc)
		got := append(head, rest...)
		if err == nil && !bytes.Equal(got, oldV) && !bytes.Equal(got, newV) {
			t.Errorf("reader across a replace: %s", diff(got, oldV))
		}
		if err != nil && bytes.ContainsRune(got, 'n') && bytes.ContainsRune(got, 'o') {
			t.Errorf("reader across a replace mixed versions before failing: %v", err)
		}
		wantContent(t, s, "f", newV)
	})
	t.Run("ReadFile/dir", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/f", []byte("x"))
		if b, err := s.ReadFile(t.Context(), "d"); err == nil {
			t.Errorf("ReadFile of a directory = %q, want an error", b)
		}
		if b, err := readAll(s.Open(t.Context(), "d")); err == nil {
			t.Errorf("Open of a directory read %q, want an error", b)
		}
	})
}

func testReadPrefix(t *testing.T, nb newStorage) {
	s := nb(t)
	data := pattern(64<<10, 2)
	mustWrite(t, s, "f", data)
	mustWrite(t, s, "empty", nil)
	cases := []struct {
		name string
		file string
		n    int
		want []byte
	}{
		{"zero", "f", 0, nil},
		{"one", "f", 1, data[:1]},
		{"smaller", "f", 4096, data[:4096]},
		{"equal", "f", len(data), data},
		{"larger", "f", len(data) + 1, data},
		{"much-larger", "f", 1 << 30, data},
		{"empty-file", "empty", 10, nil},
		{"empty-file-zero", "empty", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.ReadPrefix(t.Context(), c.file, c.n)
			if err != nil {
				t.Fatalf("ReadPrefix(%s, %d): %v", c.file, c.n, err)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("ReadPrefix(%s, %d): %s", c.file, c.n, diff(got, c.want))
			}
		})
	}
	t.Run("negative", func(t *testing.T) {
		got, err := s.ReadPrefix(t.Context(), "f", -1)
		if len(got) > 0 {
			t.Errorf("ReadPrefix(f, -1) returned %d bytes", len(got))
		}
		wantErr(t, "ReadPrefix(f, -1)", err, backend.ErrInvalidRange, "f")
	})
	t.Run("dir", func(t *testing.T) {
		mustEnsureDir(t, s, "d")
		if b, err := s.ReadPrefix(t.Context(), "d", 10); err == nil {
			t.Errorf("ReadPrefix of a directory = %q, want an error", b)
		}
	})
}

func testOpenRange(t *testing.T, nb newStorage) {
	s := nb(t)
	const size = 10000
	data := pattern(size, 3)
	mustWrite(t, s, "f", data)
	mustWrite(t, s, "empty", nil)
	cases := []struct {
		name        string
		file        string
		off, length int64
		want        []byte
	}{
		{"whole", "f", 0, -1, data},
		{"whole-exact", "f", 0, size, data},
		{"head", "f", 0, 10, data[:10]},
		{"middle", "f", 1234, 4321, data[1234 : 1234+4321]},
		{"to-end", "f", 9000, -1, data[9000:]},
		{"clipped", "f", 9990, 100, data[9990:]},
		{"last-byte", "f", size - 1, 1, data[size-1:]},
		{"length-zero", "f", 100, 0, nil},
		{"length-huge", "f", 10, math.MaxInt64, data[10:]},
		{"offset-huge", "f", math.MaxInt64, 10, nil},
		{"offset-at-end", "f", size, 10, nil},
		{"offset-at-end-to-end", "f", size, -1, nil},
		{"offset-after-end", "f", size + 5000, 10, nil},
		{"empty-file", "empty", 0, -1, nil},
		{"empty-file-after-end", "empty", 3, 3, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(s.OpenRange(t.Context(), c.file, c.off, c.length))
			if err != nil {
				t.Fatalf("OpenRange(%s, %d, %d): %v", c.file, c.off, c.length, err)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("OpenRange(%s, %d, %d): %s", c.file, c.off, c.length, diff(got, c.want))
			}
		})
	}
	t.Run("negative-offset", func(t *testing.T) {
		for _, length := range []int64{-1, 0, 10} {
			rc, err := s.OpenRange(t.Context(), "f", -1, length)
			if rc != nil {
				rc.Close()
			}
			wantErr(t, "OpenRange(f, -1, ...)", err, backend.ErrInvalidRange, "f")
		}
	})
	t.Run("many-ranges", func(t *testing.T) {
		// Consecutive ranges put back together are the file.
		var got []byte
		for off := int64(0); off < size; off += 777 {
			part, err := readAll(s.OpenRange(t.Context(), "f", off, 777))
			if err != nil {
				t.Fatalf("OpenRange(f, %d, 777): %v", off, err)
			}
			got = append(got, part...)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("ranges joined: %s", diff(got, data))
		}
	})
}

func testStat(t *testing.T, nb newStorage) {
	t.Run("file", func(t *testing.T) {
		s := nb(t)
		before := time.Now()
		mustWrite(t, s, "d/f", pattern(1234, 1))
		after := time.Now()
		info, err := s.Stat(t.Context(), "d/f")
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if info.Name != "d/f" || info.Size != 1234 || info.IsDir || info.Base() != "f" {
			t.Errorf("Stat(d/f) = %+v", info)
		}
		// Stores keep whole seconds at worst; the clock is this machine's.
		lo, hi := before.Truncate(time.Second).Add(-time.Second), after.Add(time.Second)
		if info.ModTime.Before(lo) || info.ModTime.After(hi) {
			t.Errorf("Stat(d/f).ModTime = %v, want between %v and %v", info.ModTime, lo, hi)
		}
	})
	t.Run("dir", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/e/f", []byte("x"))
		mustEnsureDir(t, s, "empty")
		for _, d := range []string{"d", "d/e", "empty"} {
			info, err := s.Stat(t.Context(), d)
			if err != nil || !info.IsDir || info.Size != 0 || info.Name != d {
				t.Errorf("Stat(%q) = %+v, %v; want a directory of size 0", d, info, err)
			}
		}
	})
	t.Run("size-follows-writes", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		total := 0
		for i := range 3 {
			chunk := pattern(500+i, uint64(i))
			mustWriteTo(t, w, chunk)
			mustSync(t, w)
			total += len(chunk)
			info, err := s.Stat(t.Context(), "f")
			if err != nil || info.Size != int64(total) {
				t.Errorf("Stat after Sync %d = %+v, %v; want size %d", i, info, err, total)
			}
		}
		mustClose(t, w)
		mustWrite(t, s, "f", []byte("xy"))
		info, err := s.Stat(t.Context(), "f")
		if err != nil || info.Size != 2 {
			t.Errorf("Stat after WriteFile = %+v, %v; want size 2", info, err)
		}
	})
}
