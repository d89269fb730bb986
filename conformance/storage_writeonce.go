package conformance

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/trovekit/trove/backend"
)

// testWriteOnce checks the write-once fast path (backend.CreateFile and
// backend.OpenInfo), native or fallen back on the general methods.
func testWriteOnce(t *testing.T, nb newStorage) {
	t.Run("round-trip", func(t *testing.T) {
		s := nb(t)
		ctx := t.Context()
		data := pattern(70000, 3)
		if err := backend.CreateFile(ctx, s, "ab/cd/f", data); err != nil {
			t.Fatalf("CreateFile: %v", err)
		}
		wantContent(t, s, "ab/cd/f", data)
		rc, info, err := backend.OpenInfo(ctx, s, "ab/cd/f")
		if err != nil {
			t.Fatalf("OpenInfo: %v", err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("OpenInfo read %d bytes, %v; want %d", len(got), err, len(data))
		}
		if info.Name != "ab/cd/f" || info.Size != int64(len(data)) || info.IsDir || info.ModTime.IsZero() {
			t.Errorf("OpenInfo info = %+v", info)
		}
	})
	t.Run("present", func(t *testing.T) {
		s := nb(t)
		ctx := t.Context()
		data := pattern(1000, 4)
		mustWrite(t, s, "f", data)
		err := backend.CreateFile(ctx, s, "f", data)
		if s.Capabilities().WriteOnce && !errors.Is(err, fs.ErrExist) {
			t.Errorf("CreateFile of a present file = %v, want fs.ErrExist", err)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			t.Errorf("CreateFile of a present file = %v", err)
		}
		wantContent(t, s, "f", data)
	})
	t.Run("missing", func(t *testing.T) {
		s := nb(t)
		_, _, err := backend.OpenInfo(t.Context(), s, "nope/f")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenInfo of a missing file = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("remove", func(t *testing.T) {
		s := nb(t)
		ctx := t.Context()
		mustWrite(t, s, "d/keep", []byte("k"))
		if err := backend.CreateFile(ctx, s, "d/f", []byte("x")); err != nil {
			t.Fatalf("CreateFile: %v", err)
		}
		if err := backend.PutFile(ctx, s, "d/f", []byte("replaced")); err != nil {
			t.Fatalf("PutFile: %v", err)
		}
		wantContent(t, s, "d/f", []byte("replaced"))
		if err := backend.PutFile(ctx, s, "d/g", []byte("new")); err != nil {
			t.Fatalf("PutFile of a new file: %v", err)
		}
		wantContent(t, s, "d/g", []byte("new"))
		if err := backend.RemoveFile(ctx, s, "d/f"); err != nil {
			t.Fatalf("RemoveFile: %v", err)
		}
		if _, err := s.Stat(ctx, "d/f"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat after RemoveFile = %v, want fs.ErrNotExist", err)
		}
		wantContent(t, s, "d/keep", []byte("k"))
		// A bucket whose delete does not say (S3) may answer nil.
		if err := backend.RemoveFile(ctx, s, "d/f"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("RemoveFile of a missing file = %v, want fs.ErrNotExist or nil", err)
		}
		if err := backend.RemoveFile(ctx, s, "../f"); !errors.Is(err, backend.ErrInvalidPath) {
			t.Errorf("RemoveFile(../f) = %v, want ErrInvalidPath", err)
		}
		if err := backend.PutFile(ctx, s, "a//b", nil); !errors.Is(err, backend.ErrInvalidPath) {
			t.Errorf("PutFile(a//b) = %v, want ErrInvalidPath", err)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		s := nb(t)
		ctx := t.Context()
		if err := backend.CreateFile(ctx, s, "../f", nil); !errors.Is(err, backend.ErrInvalidPath) {
			t.Errorf("CreateFile(../f) = %v, want ErrInvalidPath", err)
		}
		if _, _, err := backend.OpenInfo(ctx, s, "a//b"); !errors.Is(err, backend.ErrInvalidPath) {
			t.Errorf("OpenInfo(a//b) = %v, want ErrInvalidPath", err)
		}
	})
}
