package conformance

import (
	"testing"

	"github.com/trovekit/trove/backend"
)

// BenchStorage measures the Storage operations upper layers lean on, with
// b.SetBytes so results read as MB/s. newBackend is the constructor given
// to TestStorage: a fresh, empty backend per benchmark, cleaned up by it.
func BenchStorage(b *testing.B, newBackend func(tb testing.TB) backend.Storage) {
	b.Run("AppendSync/1KiB", func(b *testing.B) {
		s := newBackend(b)
		rec := pattern(1<<10, 1)
		w, err := s.OpenWriter(b.Context(), "log", backend.WriterOptions{})
		if err != nil {
			b.Fatalf("OpenWriter: %v", err)
		}
		defer w.Close()
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if _, err := w.Write(rec); err != nil {
				b.Fatalf("Write: %v", err)
			}
			if err := w.Sync(); err != nil {
				b.Fatalf("Sync: %v", err)
			}
		}
	})
	for _, size := range []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}} {
		b.Run("WriteFile/"+size.name, func(b *testing.B) {
			s := newBackend(b)
			data := pattern(size.n, 2)
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if err := s.WriteFile(b.Context(), "f", data); err != nil {
					b.Fatalf("WriteFile: %v", err)
				}
			}
		})
	}
	b.Run("ReadPrefix/4KiB-of-1MiB", func(b *testing.B) {
		s := newBackend(b)
		if err := s.WriteFile(b.Context(), "f", pattern(1<<20, 3)); err != nil {
			b.Fatalf("WriteFile: %v", err)
		}
		b.SetBytes(4 << 10)
		for b.Loop() {
			got, err := s.ReadPrefix(b.Context(), "f", 4<<10)
			if err != nil || len(got) != 4<<10 {
				b.Fatalf("ReadPrefix = %d bytes, %v", len(got), err)
			}
		}
	})
}
