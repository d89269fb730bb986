package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sync"
)

// fakeBlobs is a map-backed blobStore for unit tests of this package's own
// logic; the conformance suite runs on the real cas store.
type fakeBlobs struct {
	mu    sync.Mutex
	blobs map[string][]byte
	puts  int
}

func newFakeBlobs() *fakeBlobs { return &fakeBlobs{blobs: map[string][]byte{}} }

func sumRef(data []byte) string {
	h := sha256.Sum256(data)
	return "blob:sha256:" + hex.EncodeToString(h[:])
}

func (f *fakeBlobs) newBatch() blobBatch { return &fakeBatch{f: f, pending: map[string][]byte{}} }

func (f *fakeBlobs) get(_ context.Context, ref string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.blobs[ref]
	if !ok {
		return nil, &fs.PathError{Op: "get", Path: ref, Err: fs.ErrNotExist}
	}
	if sumRef(data) != ref {
		return nil, &fs.PathError{Op: "get", Path: ref, Err: fmt.Errorf("digest mismatch")}
	}
	return append([]byte(nil), data...), nil
}

func (f *fakeBlobs) sumLike(_ string, data []byte) (string, error) { return sumRef(data), nil }

type fakeBatch struct {
	f       *fakeBlobs
	mu      sync.Mutex
	pending map[string][]byte
}

func (b *fakeBatch) put(_ context.Context, data []byte) (string, error) {
	ref := sumRef(data)
	b.mu.Lock()
	b.pending[ref] = append([]byte(nil), data...)
	b.mu.Unlock()
	return ref, nil
}

func (b *fakeBatch) flush(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	for ref, data := range b.pending {
		if _, ok := b.f.blobs[ref]; !ok {
			b.f.blobs[ref] = data
			b.f.puts++
		}
	}
	clear(b.pending)
	return nil
}

func (b *fakeBatch) discard() {
	b.mu.Lock()
	clear(b.pending)
	b.mu.Unlock()
}
