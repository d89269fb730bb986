package cloud_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// What a Sync costs with its folds does not grow with the file: a file
// grown from empty by 4 KiB Syncs uploads per Sync, folds counted, at
// most 1.5 times as much over 1,024 Syncs from 64 MiB as over 1,024 from 1
// MiB, and reads whole in at most 80 bucket calls (each one request on S3
// and SeaweedFS). Folds are counted whether the writer makes them at Sync
// (WithCompactOpen) or in the background (the default): Close waits for
// the last one, and folds what Syncs made while a lagging fold ran
// (before, the read took 61 to 82 calls, depending on how far the folds
// lagged).
//
// It runs on the buckets $TROVE_APPEND_COST names (comma-separated, of
// memblob, fileblob, s3 and seaweedfs; memblob when unset). Growing the
// files takes 37,000 requests, which under -race take the S3 fake 95 s,
// so `make unit` runs it on memblob and `make conformance`, without
// -race, on the others. On s3 and seaweedfs only as the writer folds by
// default (in the background): WithCompactOpen, which no store opened by
// URL uses, folds with the same code, and on SeaweedFS would add two
// minutes.
func TestAppendCostFlat(t *testing.T) {
	want := []string{"memblob"}
	if s := os.Getenv("TROVE_APPEND_COST"); s != "" {
		want = strings.Split(s, ",")
	}
	kinds := countedKinds(cloudtest.StartSeaweedFS(t))
	for _, name := range want {
		i := slices.IndexFunc(kinds, func(k countedKind) bool { return k.name == name })
		if i < 0 {
			t.Fatalf("TROVE_APPEND_COST names %q: not memblob, fileblob, s3 or seaweedfs", name)
		}
		modes := []struct {
			name string
			opts []cloud.Option
		}{
			{"background", nil},
			{"at-sync", []cloud.Option{cloud.WithCompactOpen(8), cloud.WithFoldGrace(0)}},
		}
		if name == "s3" || name == "seaweedfs" {
			modes = modes[:1]
		}
		for _, m := range modes {
			t.Run(name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				var tr cloud.Traffic
				st := kinds[i].open(t, &tr, m.opts...)
				defer st.Close()
				appendCostFlat(t, st, &tr)
			})
		}
	}
}

func appendCostFlat(t *testing.T, st *cloud.Storage, tr *cloud.Traffic) {
	ctx := t.Context()
	const window = 1024
	// perSync grows a new file to size, then tells what each of the next
	// window Syncs uploaded, the writer closed (its folds done).
	perSync := func(name string, to int64) float64 {
		w, err := st.OpenWriter(ctx, name, backend.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		appendSyncs(t, w, int(to/appendRec))
		up := tr.Up.Load()
		appendSyncs(t, w, window)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return float64(tr.Up.Load()-up) / window
	}
	small, large := perSync("s", 1<<20), perSync("f", 64<<20)
	t.Logf("bytes uploaded per 4 KiB Sync: %.0f at 1 MiB, %.0f at 64 MiB (%.2fx)", small, large, large/small)
	if large > 1.5*small {
		t.Errorf("a Sync at 64 MiB uploads %.0f bytes, at 1 MiB %.0f: more than 1.5 times", large, small)
	}
	calls := tr.Calls.Load()
	data, err := st.ReadFile(ctx, "f")
	if err != nil || len(data) != 64<<20+window*appendRec {
		t.Fatalf("read %d bytes, %v", len(data), err)
	}
	if n := tr.Calls.Load() - calls; n > 80 {
		t.Errorf("reading the 64 MiB file took %d bucket calls, want at most 80", n)
	} else {
		t.Logf("reading the 64 MiB file: %d bucket calls", n)
	}
}
