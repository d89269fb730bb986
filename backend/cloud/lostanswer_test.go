package cloud_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// A Sync whose segment reached the bucket but whose answer was lost (a
// 500 after the write; the S3 client sends it again and meets its own
// object, 412) is the writer's own segment, not another writer's: the
// Sync succeeds and the file holds every byte once. Before, the writer
// failed with ErrLocked ("another writer took segment N").
func TestSyncAnswerLost(t *testing.T) {
	var lost atomic.Int64
	loseOnce := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, ".~seg/") && r.ContentLength > 0 && lost.Add(1) == 1 {
				next.ServeHTTP(httptest.NewRecorder(), r) // written; the answer is lost
				http.Error(w, `<Error><Code>InternalError</Code></Error>`, http.StatusInternalServerError)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	st := cloudtest.StartS3(t, loseOnce).New(t)
	ctx := t.Context()
	w, err := st.OpenWriter(ctx, "d/f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"one\n", "two\n"} {
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatalf("sync of %q: %v", line, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if lost.Load() < 2 {
		t.Fatalf("no answer was lost (%d segment uploads)", lost.Load())
	}
	got, err := st.ReadFile(ctx, "d/f")
	if err != nil || string(got) != "one\ntwo\n" {
		t.Fatalf("d/f = %q, %v", got, err)
	}
}
