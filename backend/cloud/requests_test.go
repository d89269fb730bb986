package cloud_test

import (
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// What the calls of a bucket Storage cost in requests, counted on an S3
// server; the test fails when a count grows.
func TestRequests(t *testing.T) {
	srv, c := cloudtest.StartCountingS3(t)
	st := srv.New(t)
	ctx := t.Context()
	must, row := requestRows(t, c)
	wo := st.(backend.WriteOnce)
	row("CreateFile", 1, func() { must(wo.CreateFile(ctx, "b/12/1234", []byte("x"))) })
	row("CreateFile of a present file", 1, func() { wo.CreateFile(ctx, "b/12/1234", []byte("x")) })
	row("OpenInfo", 1, func() {
		rc, _, err := wo.OpenInfo(ctx, "b/12/1234")
		must(err)
		rc.Close()
	})
	row("OpenInfo of a missing file", 1, func() { wo.OpenInfo(ctx, "b/12/nope") })
	row("List of a missing directory", 1, func() {
		for range st.List(ctx, "nope") {
		}
	})
	row("WriteFile of a new file", 5, func() { must(st.WriteFile(ctx, "a/b/f", []byte("x"))) })
	row("WriteFile over a file", 3, func() { must(st.WriteFile(ctx, "a/b/f", []byte("y"))) })
	row("Stat", 2, func() { _, err := st.Stat(ctx, "a/b/f"); must(err) })
	row("ReadFile", 2, func() { _, err := st.ReadFile(ctx, "a/b/f"); must(err) })
	var w backend.Writer
	row("OpenWriter of a new file", 5, func() {
		var err error
		w, err = st.OpenWriter(ctx, "a/s.jsonl", backend.WriterOptions{})
		must(err)
	})
	// Fifteen Syncs, more than a fan-out of 8: a Sync never folds (the
	// writer starts a fold in the background after 16, WithCompactEvery).
	for range 15 {
		row("Write and Sync", 2, func() { appendLine(t, w) })
	}
	row("Close after Sync", 0, func() { must(w.Close()) })
	// A read and a delete per part folded, one upload.
	row("Compact of 16 parts", 2*16+3, func() { must(backend.Compact(ctx, st, "a/s.jsonl")) })

	// A session's file: created exclusive, then written by its creator
	// alone, whose first segment needs no look before it.
	row("OpenWriter of a new file, exclusive", 3, func() {
		var err error
		w, err = st.OpenWriter(ctx, "a/t.jsonl", backend.WriterOptions{Exclusive: true})
		must(err)
	})
	row("its first Write and Sync", 1, func() { appendLine(t, w) })
	row("its second", 2, func() { appendLine(t, w) })
	must(w.Close())
	// A name its maker made new (WriterOptions.Fresh): no look at all.
	row("OpenWriter of a new file, exclusive and fresh", 1, func() {
		var err error
		w, err = st.OpenWriter(ctx, "n/u.jsonl", backend.WriterOptions{Exclusive: true, Fresh: true})
		must(err)
	})
	row("its first Write and Sync", 1, func() { appendLine(t, w) })
	must(w.Close())
	wf := st.(backend.WholeFile)
	row("PutFile", 1, func() { must(wf.PutFile(ctx, "a/m.json", []byte("{}"))) })
	row("RemoveFile", 1, func() { must(wf.RemoveFile(ctx, "a/m.json")) })
	row("RemoveFile of a missing file", 1, func() { wf.RemoveFile(ctx, "a/m.json") })
}

// The calls a session makes, counted on the GCS fake: the same goals as on
// S3 (GCS deletes without a look first by itself).
func TestRequestsGCS(t *testing.T) {
	c := cloudtest.NewCounter()
	st := cloudtest.StartGCS(t, c.Wrap).New(t)
	ctx := t.Context()
	must, row := requestRows(t, c)
	wo := st.(backend.WriteOnce)
	wf := st.(backend.WholeFile)
	row("CreateFile", 1, func() { must(wo.CreateFile(ctx, "s/meta.json", []byte("{}"))) })
	row("OpenInfo", 1, func() {
		rc, _, err := wo.OpenInfo(ctx, "s/meta.json")
		must(err)
		rc.Close()
	})
	var w backend.Writer
	// The parent s is looked at once (a file there would be in the way);
	// the store remembers it is none.
	row("OpenWriter of a new file, exclusive, in a new directory", 4, func() {
		var err error
		w, err = st.OpenWriter(ctx, "s/t.jsonl", backend.WriterOptions{Exclusive: true})
		must(err)
	})
	row("its first Write and Sync", 1, func() { appendLine(t, w) })
	for range 10 {
		row("Write and Sync", 2, func() { appendLine(t, w) })
	}
	row("Close after Sync", 0, func() { must(w.Close()) })
	row("PutFile", 1, func() { must(wf.PutFile(ctx, "s/meta.json", []byte("{}"))) })
	row("RemoveFile", 1, func() { must(wf.RemoveFile(ctx, "s/meta.json")) })
}

// requestRows returns what the request tables share: must fails the test
// on an error, row logs what fn asked of the server and fails when that is
// more than max.
func requestRows(t *testing.T, c *cloudtest.Counter) (must func(error), row func(what string, max int, fn func())) {
	must = func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	row = func(what string, max int, fn func()) {
		t.Helper()
		t.Logf("%-32s %v", what, c.AtMost(t, what, max, fn))
	}
	return must, row
}

// appendLine writes a line to w and syncs it.
func appendLine(t *testing.T, w backend.Writer) {
	t.Helper()
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
}
