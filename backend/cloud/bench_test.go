package cloud_test

import (
	"bytes"
	"fmt"
	"testing"

	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// BenchmarkAppendSync appends 4 KiB and syncs, with one writer that stays
// open on a file of 1, 16 and 64 MiB: what a Sync costs in time, bytes
// uploaded (up-B/op) and read back (down-B/op) by folds, and bucket calls.
// Run it with a fixed count (-benchtime 4096x) so that every size pays its
// folds over the same number of syncs; the cost should not grow with the
// file.
func BenchmarkAppendSync(b *testing.B) {
	kinds := []struct {
		name string
		open func(b *testing.B, t *cloud.Traffic) *cloud.Storage
	}{
		{"memblob", func(b *testing.B, t *cloud.Traffic) *cloud.Storage {
			return cloud.NewCounted(memblob.OpenBucket(nil), t)
		}},
		{"fileblob", func(b *testing.B, t *cloud.Traffic) *cloud.Storage {
			dir := b.TempDir()
			bk, err := fileblob.OpenBucket(dir, &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
			if err != nil {
				b.Fatal(err)
			}
			return cloud.NewCounted(bk, t, cloud.WithLocalDir(dir))
		}},
		{"s3", func(b *testing.B, t *cloud.Traffic) *cloud.Storage {
			return cloud.NewCounted(cloudtest.StartS3(b).Bucket(b), t)
		}},
	}
	for _, k := range kinds {
		for _, mib := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/%dMiB", k.name, mib), func(b *testing.B) {
				benchAppendSync(b, k.open, mib<<20)
			})
		}
	}
}

func benchAppendSync(b *testing.B, open func(*testing.B, *cloud.Traffic) *cloud.Storage, size int) {
	ctx := b.Context()
	var t cloud.Traffic
	st := open(b, &t)
	defer st.Close()
	if err := st.WriteFile(ctx, "f", bytes.Repeat([]byte("0123456789abcde\n"), size/16)); err != nil {
		b.Fatal(err)
	}
	w, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rec := bytes.Repeat([]byte("x"), 4<<10)
	up, down, calls := t.Up.Load(), t.Down.Load(), t.Calls.Load()
	b.ResetTimer()
	for range b.N {
		if _, err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(t.Up.Load()-up)/n, "up-B/op")
	b.ReportMetric(float64(t.Down.Load()-down)/n, "down-B/op")
	b.ReportMetric(float64(t.Calls.Load()-calls)/n, "calls/op")
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	got, err := st.Stat(ctx, "f")
	if err != nil || got.Size != int64(size+b.N*len(rec)) {
		b.Fatalf("Stat = %+v, %v; want %d bytes", got, err, size+b.N*len(rec))
	}
}
