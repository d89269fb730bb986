package cloud_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/conformance"
)

// uploads counts the request body bytes of uploads: to segments (what a
// Sync sends) and to everything else (bases a compaction writes).
type uploads struct{ segments, other atomic.Int64 }

// countingS3 opens a Storage on a fresh bucket of an S3 server on 127.0.0.1
// that counts upload bytes.
func countingS3(t *testing.T, opts ...cloud.Option) (backend.Storage, *blob.Bucket, *uploads) {
	t.Helper()
	up := &uploads{}
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut || r.Method == http.MethodPost {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				last := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
				if strings.HasPrefix(last, ".~") && strings.Trim(last[2:], "0123456789") == "" {
					up.segments.Add(int64(len(body)))
				} else {
					up.other.Add(int64(len(body)))
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			next.ServeHTTP(w, r)
		})
	}
	b := cloudtest.StartS3(t, count).Bucket(t)
	st, err := cloud.New(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, b, up
}

// One Sync uploads the bytes written since the last Sync, not the file: 1000
// appends of 1 KiB, each synced, upload about 1 MiB of segments, not the
// 500 MiB that re-uploading the whole file at every Sync would cost. The
// writer stays open throughout, yet the file stays a bounded number of
// objects: it folds segments into tiers, and the whole file once the parts
// hold as much as the base, so folds upload a few times what was appended.
func TestSyncUploadsOnlyNewBytes(t *testing.T) {
	st, b, up := countingS3(t, cloud.WithCompactOpen(16), cloud.WithFoldGrace(0))
	ctx := t.Context()
	w, err := st.OpenWriter(ctx, "sessions/s.jsonl", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := bytes.Repeat([]byte("x"), 1023)
	rec = append(rec, '\n')
	const n = 1000
	before := up.segments.Load()
	maxObjects := 0
	for i := range n {
		if _, err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatalf("Sync %d: %v", i, err)
		}
		// Each Sync costs the new kilobyte plus request overhead, never
		// the file so far.
		if got := up.segments.Load() - before; got > int64(i+1)*int64(len(rec))+int64(i+1)*512 {
			t.Fatalf("after %d syncs %d segment bytes were uploaded; want about %d", i+1, got, (i+1)*len(rec))
		}
		if i%100 == 99 {
			maxObjects = max(maxObjects, len(keys(t, b)))
		}
	}
	written := int64(n * len(rec))
	if got := up.segments.Load() - before; got < written || got > written+written/2 {
		t.Fatalf("%d syncs of %d bytes uploaded %d segment bytes, want about %d", n, len(rec), got, written)
	}
	// Whole-file folds copy each byte about once (the base doubles), tiers
	// once per level: 1000 appends after a 512 KiB base make two levels.
	if got := up.other.Load(); got > 3*written {
		t.Fatalf("compactions uploaded %d bytes for %d appended, want at most three times", got, written)
	}
	// The name, a base, at most 15 parts per level, the writer's claim.
	if maxObjects > 2+15*3+1 {
		t.Fatalf("an open writer's file grew to %d objects", maxObjects)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := st.ReadFile(ctx, "sessions/s.jsonl")
	if err != nil || int64(len(data)) != written || !bytes.Equal(data[:len(rec)], rec) {
		t.Fatalf("read back %d bytes, %v; want %d", len(data), err, written)
	}
	if got := len(keys(t, b)); got > 2+15*3 {
		t.Fatalf("after Close the file is %d objects", got)
	}
}

// A second writer of one file is detected, never merged: opening claims the
// next segment number, so the writer that opened first fails at its next
// Sync, and what it had synced before stays.
func TestSecondWriterDetectedS3(t *testing.T) {
	st, _, _ := countingS3(t)
	ctx := t.Context()
	a, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Write([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	b, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("lost\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("the first writer's Sync after a second opened = %v, want ErrLocked", err)
	}
	if _, err := b.Write([]byte("second\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := st.ReadFile(ctx, "f")
	if err != nil || string(data) != "first\nsecond\n" {
		t.Fatalf("f = %q, %v; want the first writer's synced bytes, then the second's", data, err)
	}
}

// A hostile name is refused before any request reaches the bucket.
func TestHostileNamesSendNoRequest(t *testing.T) {
	var requests atomic.Int64
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			next.ServeHTTP(w, r)
		})
	}
	conformance.HostileUnreached(t, cloudtest.StartS3(t, count).New(t), requests.Load)
}
