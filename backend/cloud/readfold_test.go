package cloud_test

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// recSize is the size of a record TestReadsDuringFolds appends.
const recSize = 4 << 10

// foldRecord is record i: 4 KiB that say which record they are, so a read
// tells what it holds.
func foldRecord(i int) []byte {
	rec := bytes.Repeat([]byte{byte(i)}, recSize)
	binary.BigEndian.PutUint64(rec, uint64(i))
	return rec
}

// appendRun is one writer's progress, which readers look at.
type appendRun struct {
	synced atomic.Int64  // records synced so far
	tick   chan struct{} // a Sync returned
	done   chan struct{} // the writer is through
}

// between waits for two more Syncs, or the writer's end: what a torn
// listing (cloud.NewTorn) lets happen between its two looks.
func (a *appendRun) between() {
	want := a.synced.Load() + 2
	for a.synced.Load() < want {
		select {
		case <-a.done:
			return
		case <-a.tick:
		}
	}
}

// append writes and syncs records 0 to n-1, telling readers of each Sync,
// then says it is through.
func (a *appendRun) append(t *testing.T, w backend.Writer, n int) {
	t.Helper()
	defer close(a.done)
	for i := range n {
		if _, err := w.Write(foldRecord(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		a.synced.Store(int64(i + 1))
		select {
		case a.tick <- struct{}{}:
		default:
		}
	}
}

// twoMachines opens two Storages on one bucket of each kind, as two
// machines would: neither tells the other what it does. On memblob and S3
// the reader's listings are torn as fileblob's can be (cloud.NewTorn);
// fileblob's own are. On SeaweedFS, the real engine, the reader lists as
// the engine does: its reads, not held up by a torn listing's wait for
// two Syncs, meet about seven times as many folds (80 reads and 290 Stats
// beside 320 Syncs, against 11 and 15). weed starts on the first
// seaweedfs bucket.
func twoMachines(t *testing.T, kind string, weed *cloudtest.SeaweedFS, a *appendRun, opts ...cloud.Option) (w, r backend.Storage) {
	closing := func(st *cloud.Storage, err error) backend.Storage {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	switch kind {
	case "memblob":
		b := memblob.OpenBucket(nil)
		t.Cleanup(func() { b.Close() })
		return cloud.NewShared(b, opts...), cloud.NewTorn(b, a.between, opts...)
	case "fileblob":
		dir := t.TempDir()
		return closing(cloud.OpenFileblob(dir, opts...)), closing(cloud.OpenFileblob(dir, opts...))
	case "s3":
		srv := cloudtest.StartS3(t)
		name := srv.CreateBucket(t)
		rb := srv.Open(t, name)
		t.Cleanup(func() { rb.Close() })
		return closing(cloud.New(srv.Open(t, name), opts...)), cloud.NewTorn(rb, a.between, opts...)
	case "seaweedfs":
		name := weed.CreateBucket(t)
		opts = append(opts, cloud.WithEmptyPrefixes())
		return closing(cloud.New(weed.Open(t, name), opts...)), closing(cloud.New(weed.Open(t, name), opts...))
	}
	t.Fatalf("no bucket of kind %q", kind)
	return nil, nil
}

// A reader on another machine never fails, nor comes up short, because a
// fold moved bytes under it: while one handle appends and Syncs (folding
// in the background every 8 Syncs), a second Storage on the same bucket
// reads the file whole and Stats it, over and over; every read and Stat
// holds every record synced before it began, in order.
func TestReadsDuringFolds(t *testing.T) {
	weed := cloudtest.StartSeaweedFS(t)
	for _, kind := range []string{"memblob", "fileblob", "s3", "seaweedfs"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			a := &appendRun{tick: make(chan struct{}, 1), done: make(chan struct{})}
			ws, rs := twoMachines(t, kind, weed, a, cloud.WithCompactEvery(8))
			readsDuringFolds(t, ws, rs, a, 320)
		})
	}
}

func readsDuringFolds(t *testing.T, ws, rs backend.Storage, a *appendRun, n int) {
	ctx := t.Context()
	w, err := ws.OpenWriter(ctx, "d/f", backend.WriterOptions{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	var reads, stats, errs, short, wrong atomic.Int64
	check := func(what string, got int64, data []byte, want int64, err error) {
		if err != nil {
			errs.Add(1)
			t.Errorf("%s: %v", what, err)
			return
		}
		if got < want*recSize || got%recSize != 0 {
			short.Add(1)
			t.Errorf("%s: %d bytes, want the %d records synced before it (%d bytes)", what, got, want, want*recSize)
		}
		for i := 0; i < len(data)/recSize; i++ {
			if !bytes.Equal(data[i*recSize:(i+1)*recSize], foldRecord(i)) {
				wrong.Add(1)
				t.Errorf("%s: record %d of %d is not what was written", what, i, len(data)/recSize)
				return
			}
		}
	}
	loop := func(f func()) func() {
		return func() {
			for {
				select {
				case <-a.done:
					return
				default:
					f()
				}
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(loop(func() {
		want := a.synced.Load()
		data, err := rs.ReadFile(ctx, "d/f")
		reads.Add(1)
		check("ReadFile", int64(len(data)), data, want, err)
	}))
	wg.Go(loop(func() {
		want := a.synced.Load()
		info, err := rs.Stat(ctx, "d/f")
		stats.Add(1)
		check("Stat", info.Size, nil, want, err)
	}))
	a.append(t, w, n)
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reads and %d Stats beside %d Syncs: %d errors, %d short, %d wrong", reads.Load(), stats.Load(), n, errs.Load(), short.Load(), wrong.Load())
	data, err := rs.ReadFile(ctx, "d/f")
	check("ReadFile after Close", int64(len(data)), data, int64(n), err)
	info, err := rs.Stat(ctx, "d/f")
	check("Stat after Close", info.Size, nil, int64(n), err)
	if len(data) != n*recSize || info.Size != int64(n*recSize) {
		t.Errorf("after Close: read %d bytes, Stat %d, want %d", len(data), info.Size, n*recSize)
	}
}

// A fold never acts on a torn listing as if it were the file: a
// background fold that listed a segment made later but missed one made
// before it once wrote a base past the gap, which hid the missed segment's
// bytes for good (a Stat after Close 16 KiB short, four records of 4 KiB
// missing). Here the writer's own listings are torn.
func TestTornListingLosesNothing(t *testing.T) {
	b := memblob.OpenBucket(nil)
	t.Cleanup(func() { b.Close() })
	a := &appendRun{tick: make(chan struct{}, 1), done: make(chan struct{})}
	var open atomic.Bool
	between := func() {
		if open.Load() {
			a.between()
		}
	}
	// The writer's own listings wait for its Syncs here: a Sync that
	// waited for a fold (the default past two intervals) would never come.
	ws := cloud.NewTorn(b, between, cloud.WithCompactEvery(8), cloud.WithFoldGrace(0), cloud.WithFoldLag(1<<30))
	ctx := t.Context()
	w, err := ws.OpenWriter(ctx, "d/f", backend.WriterOptions{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	open.Store(true)
	const n = 320
	a.append(t, w, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rs := cloud.NewShared(b)
	data, err := rs.ReadFile(ctx, "d/f")
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != n*recSize {
		t.Errorf("read %d records, want %d", len(data)/recSize, n)
	}
	for i := 0; i < len(data)/recSize; i++ {
		if !bytes.Equal(data[i*recSize:(i+1)*recSize], foldRecord(i)) {
			t.Fatalf("record %d of %d is not what was written", i, len(data)/recSize)
		}
	}
}
