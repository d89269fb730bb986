package cloud_test

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// ghostPrefixes answers every delimited listing of prefix "d/" or "e/"
// with one more common prefix, "<prefix>ghost/", under which no key is:
// what SeaweedFS lists for up to two minutes after its deletes emptied a
// folder.
func ghostPrefixes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p := q.Get("prefix")
		if r.Method != http.MethodGet || q.Get("delimiter") != "/" || (p != "d/" && p != "e/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := bytes.Replace(rec.Body.Bytes(), []byte("</ListBucketResult>"),
			[]byte("<CommonPrefixes><Prefix>"+p+"ghost/</Prefix></CommonPrefixes></ListBucketResult>"), 1)
		answer(w, rec, body, len(body))
	})
}

// answer sends rec's status and headers with body, sent up to n bytes
// of it (less is a cut answer: the head says all of it follows).
func answer(w http.ResponseWriter, rec *httptest.ResponseRecorder, body []byte, n int) {
	maps.Copy(w.Header(), rec.Header())
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	w.Write(body[:n])
	w.(http.Flusher).Flush()
}

// With WithEmptyPrefixes, a directory the engine lists but holds no key
// is not listed, and a directory holding only such is missing; without
// it, the ghost shows (so the fake does what SeaweedFS does).
func TestEmptyPrefixes(t *testing.T) {
	srv := cloudtest.StartS3(t, ghostPrefixes)
	names := func(st backend.Storage, dir string) ([]string, error) {
		var out []string
		for in, err := range st.List(t.Context(), dir) {
			if err != nil {
				return out, err
			}
			out = append(out, in.Name)
		}
		return out, nil
	}
	for _, check := range []bool{false, true} {
		var opts []cloud.Option
		if check {
			opts = append(opts, cloud.WithEmptyPrefixes())
		}
		st, err := cloud.New(srv.Bucket(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.WriteFile(t.Context(), "d/f", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := st.WriteFile(t.Context(), "d/sub/g", []byte("y")); err != nil {
			t.Fatal(err)
		}
		got, err := names(st, "d")
		want := []string{"d/f", "d/ghost", "d/sub"}
		if check {
			want = []string{"d/f", "d/sub"}
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("check=%v: List(d) = %q, %v; want %q", check, got, err, want)
		}
		got, err = names(st, "e")
		if check && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("List(e), holding only a ghost = %q, %v; want fs.ErrNotExist", got, err)
		} else if !check && !slices.Equal(got, []string{"e/ghost"}) {
			t.Errorf("List(e) without the check = %q, %v; want the ghost", got, err)
		}
	}
}
