package fs_test

import (
	"context"
	"testing"

	"github.com/trovekit/trove/backend"
	trovefs "github.com/trovekit/trove/backend/fs"
)

func BenchmarkReadPrefix(b *testing.B) {
	s, err := trovefs.NewOS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.WriteFile(ctx, "f", make([]byte, 1<<20)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.ReadPrefix(ctx, "f", 4<<10); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendSync(b *testing.B) {
	s, err := trovefs.NewOS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w, err := s.OpenWriter(context.Background(), "log", backend.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rec := make([]byte, 1<<10)
	for b.Loop() {
		w.Write(rec)
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteFile4K(b *testing.B) {
	s, err := trovefs.NewOS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	data := make([]byte, 4<<10)
	for b.Loop() {
		if err := s.WriteFile(ctx, "sessions/d/f", data); err != nil {
			b.Fatal(err)
		}
	}
}
