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

// BenchmarkAppendSync appends 4 KiB and syncs, with one writer that
// stays open on a file it grew from empty by such Syncs to 1, 16 and 64
// MiB, as a session grows: what a Sync costs in time, bytes uploaded
// (up-B/op, every background fold counted: the writer is closed, and its
// last fold waited for, before the count ends) and read back
// (down-B/op) by folds, and bucket calls. Run it with a fixed count
// (-benchtime 1024x) so that every size pays its folds over the same
// number of Syncs; the cost should not grow with the file. The seaweedfs
// rows run on a real engine (scripts/install-test-servers builds it; they
// skip without it), started once on 127.0.0.1.
func BenchmarkAppendSync(b *testing.B) {
	for _, k := range countedKinds(cloudtest.StartSeaweedFS(b)) {
		for _, mib := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/%dMiB", k.name, mib), func(b *testing.B) {
				benchAppendSync(b, k.open, mib<<20)
			})
		}
	}
}

// countedKind is a fresh bucket of one kind under a Storage that counts
// every call it makes to it.
type countedKind struct {
	name string
	open func(tb testing.TB, t *cloud.Traffic, opts ...cloud.Option) *cloud.Storage
}

// countedKinds are memblob, fileblob, s3 (gofakes3) and seaweedfs (the
// real engine, weed, which starts on the first bucket of that kind).
func countedKinds(weed *cloudtest.SeaweedFS) []countedKind {
	return []countedKind{
		{"memblob", func(tb testing.TB, t *cloud.Traffic, opts ...cloud.Option) *cloud.Storage {
			return cloud.NewCounted(memblob.OpenBucket(nil), t, opts...)
		}},
		{"fileblob", func(tb testing.TB, t *cloud.Traffic, opts ...cloud.Option) *cloud.Storage {
			dir := tb.TempDir()
			bk, err := fileblob.OpenBucket(dir, &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
			if err != nil {
				tb.Fatal(err)
			}
			return cloud.NewCounted(bk, t, append([]cloud.Option{cloud.WithLocalDir(dir)}, opts...)...)
		}},
		{"s3", func(tb testing.TB, t *cloud.Traffic, opts ...cloud.Option) *cloud.Storage {
			return cloud.NewCounted(cloudtest.StartS3(tb).Bucket(tb), t, opts...)
		}},
		{"seaweedfs", func(tb testing.TB, t *cloud.Traffic, opts ...cloud.Option) *cloud.Storage {
			return cloud.NewCounted(weed.Bucket(tb), t, append([]cloud.Option{cloud.WithEmptyPrefixes()}, opts...)...)
		}},
	}
}

func benchAppendSync(b *testing.B, open func(testing.TB, *cloud.Traffic, ...cloud.Option) *cloud.Storage, size int) {
	var t cloud.Traffic
	st := open(b, &t)
	defer st.Close()
	w, err := st.OpenWriter(b.Context(), "f", backend.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	appendSyncs(b, w, size/appendRec)
	up, down, calls := t.Up.Load(), t.Down.Load(), t.Calls.Load()
	b.ResetTimer()
	appendSyncs(b, w, b.N)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(t.Up.Load()-up)/n, "up-B/op")
	b.ReportMetric(float64(t.Down.Load()-down)/n, "down-B/op")
	b.ReportMetric(float64(t.Calls.Load()-calls)/n, "calls/op")
	got, err := st.Stat(b.Context(), "f")
	if want := int64(size/appendRec+b.N) * appendRec; err != nil || got.Size != want {
		b.Fatalf("Stat = %+v, %v; want %d bytes", got, err, want)
	}
}

// appendRec is the record BenchmarkAppendSync and TestAppendCostFlat
// append: about a session turn.
const appendRec = 4 << 10

// appendSyncs writes and syncs n records of appendRec bytes.
func appendSyncs(tb testing.TB, w backend.Writer, n int) {
	tb.Helper()
	rec := bytes.Repeat([]byte("x"), appendRec)
	for range n {
		if _, err := w.Write(rec); err != nil {
			tb.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			tb.Fatal(err)
		}
	}
}
