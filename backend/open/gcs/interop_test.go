package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/backend/open/gcs"
)

// keys are names either driver must store alike: gcsblob escapes some.
var keys = []string{"plain", "d/e/f.json", "line\nbreak\r", "up/../x", "__0x41__", "sp ace+%2F?#", "ünï/ç😀"}

// big is more than an upload sends with a Content-Length: it streams.
var big = bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)

// Objects written by this package's driver read back through gcsblob, and
// the reverse: same names, bytes, sizes and content types.
func TestInterop(t *testing.T) {
	srv := cloudtest.StartGCS(t)
	name := srv.CreateBucket(t)
	ours, theirs := srv.Open(t, name), srv.OpenGCSBlob(t, name)
	for _, dir := range []struct {
		name      string
		from, to  *blob.Bucket
		fromLabel string
	}{{"ours-to-gcsblob", ours, theirs, "ours"}, {"gcsblob-to-ours", theirs, ours, "gcsblob"}} {
		t.Run(dir.name, func(t *testing.T) {
			ctx := t.Context()
			prefix := dir.fromLabel + "/"
			for _, k := range keys {
				data := []byte("v:" + k)
				if err := dir.from.Upload(ctx, prefix+k, bytes.NewReader(data), &blob.WriterOptions{ContentType: "text/plain", Metadata: map[string]string{"m": "1"}}); err != nil {
					t.Fatalf("upload %q: %v", k, err)
				}
				checkObject(t, dir.to, prefix+k, data, "text/plain")
			}
			w, err := dir.from.NewWriter(ctx, prefix+"big", &blob.WriterOptions{ContentType: "application/octet-stream"})
			if err != nil {
				t.Fatal(err)
			}
			for p := big; len(p) > 0; p = p[min(len(p), 100_000):] {
				if _, err := w.Write(p[:min(len(p), 100_000)]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkObject(t, dir.to, prefix+"big", big, "application/octet-stream")
			if err := dir.from.Copy(ctx, prefix+"copy\n", prefix+"big", nil); err != nil {
				t.Fatal(err)
			}
			checkObject(t, dir.to, prefix+"copy\n", big, "application/octet-stream")
			r, err := dir.to.NewRangeReader(ctx, prefix+"big", 1<<20, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(got, big[1<<20:1<<20+10]) || r.Size() != int64(len(big)) {
				t.Fatalf("range: %q size %d, %v", got, r.Size(), err)
			}
			listed := map[string]bool{}
			iter := dir.to.List(&blob.ListOptions{Prefix: prefix})
			for {
				o, err := iter.Next(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				listed[strings.TrimPrefix(o.Key, prefix)] = true
			}
			for _, k := range append(keys, "big", "copy\n") {
				if !listed[k] {
					t.Errorf("%q not listed: %v", k, listed)
				}
			}
		})
	}
}

// checkObject fails t unless key in b holds data, typed ct.
func checkObject(t *testing.T, b *blob.Bucket, key string, data []byte, ct string) {
	t.Helper()
	got, err := b.ReadAll(t.Context(), key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %q: %d bytes, %v", key, len(got), err)
	}
	a, err := b.Attributes(t.Context(), key)
	if err != nil || a.Size != int64(len(data)) || a.ContentType != ct {
		t.Fatalf("attributes of %q: %+v, %v", key, a, err)
	}
}

// A listing with a delimiter pages through objects and directories in
// one order.
func TestListPages(t *testing.T) {
	srv := cloudtest.StartGCS(t)
	b := srv.Bucket(t)
	ctx := t.Context()
	for _, k := range []string{"a", "b/1", "b/2", "c", "d/1", "e"} {
		if err := b.WriteAll(ctx, k, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for tok := blob.FirstPageToken; len(tok) > 0; {
		page, next, err := b.ListPage(ctx, tok, 2, &blob.ListOptions{Delimiter: "/"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page {
			got = append(got, o.Key)
		}
		tok = next
	}
	if want := "a b/ c d/ e"; strings.Join(got, " ") != want {
		t.Fatalf("listed %q, want %q", got, want)
	}
}

// A missing object is NotFound everywhere, with its HTTP status.
func TestNotFound(t *testing.T) {
	b := cloudtest.StartGCS(t).Bucket(t)
	ctx := t.Context()
	_, aerr := b.Attributes(ctx, "none")
	_, rerr := b.NewRangeReader(ctx, "none", 0, -1, nil)
	_, zerr := b.NewRangeReader(ctx, "none", 0, 0, nil)
	derr := b.Delete(ctx, "none")
	for what, err := range map[string]error{"attributes": aerr, "read": rerr, "empty read": zerr, "delete": derr} {
		if gcerrors.Code(err) != gcerrors.NotFound || gcs.Status(err) != 404 {
			t.Errorf("%s: code %v status %d: %v", what, gcerrors.Code(err), gcs.Status(err), err)
		}
		var ge *gcs.Error
		if !b.ErrorAs(err, &ge) || ge.Code != 404 {
			t.Errorf("%s: ErrorAs: %v", what, ge)
		}
	}
	if err := b.Copy(ctx, "to", "none", nil); gcerrors.Code(err) != gcerrors.NotFound {
		t.Errorf("copy: %v", err)
	}
	if _, err := b.SignedURL(ctx, "k", nil); gcerrors.Code(err) != gcerrors.Unimplemented {
		t.Errorf("signed URL: %v", err)
	}
}

// Of writers racing to create one key, one wins; the others lose with
// FailedPrecondition (HTTP 412), both for Upload and NewWriter.
func TestIfNotExistRace(t *testing.T) {
	b := cloudtest.StartGCS(t).Bucket(t)
	ctx := t.Context()
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			opts := &blob.WriterOptions{ContentType: "text/plain", IfNotExist: true}
			if i%2 == 0 {
				errs[i] = b.Upload(ctx, "k", strings.NewReader("x"), opts)
				return
			}
			w, err := b.NewWriter(ctx, "k", opts)
			if err != nil {
				errs[i] = err
				return
			}
			w.Write([]byte("x"))
			errs[i] = w.Close()
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case gcerrors.Code(err) != gcerrors.FailedPrecondition || gcs.Status(err) != 412:
			t.Errorf("a lost race: code %v status %d: %v", gcerrors.Code(err), gcs.Status(err), err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers won, want 1", won)
	}
}

// blocked gives its bytes, then fails with err or, if nil, waits for ctx
// to end and fails with that.
type blocked struct {
	data []byte
	ctx  context.Context
	err  error
}

func (b *blocked) Read(p []byte) (int, error) {
	if len(b.data) > 0 {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// uploads watches the server's upload requests: arrived closes once one
// has sent it more than a small upload's bytes, handled once the server
// is done with it.
type uploads struct {
	arrived, handled chan struct{}
	once             sync.Once
}

func (u *uploads) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		defer close(u.handled)
		r.Body = &watched{ReadCloser: r.Body, u: u}
		next.ServeHTTP(w, r)
	})
}

type watched struct {
	io.ReadCloser
	n int
	u *uploads
}

func (w *watched) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if w.n += n; w.n > 1<<20+1000 {
		w.u.once.Do(func() { close(w.u.arrived) })
	}
	return n, err
}

// An upload cancelled, or whose source fails, mid-stream leaves no object,
// small (not sent yet) or big (streaming, half received), through Upload
// or Write.
func TestFailedUploadLeavesNothing(t *testing.T) {
	errSource := errors.New("the source failed")
	for _, c := range []struct {
		name   string
		size   int
		fail   bool // the source fails instead of the context ending
		writes bool // NewWriter and Write instead of Upload
	}{
		{"small-cancel", 10, false, false},
		{"big-cancel", len(big), false, false},
		{"big-cancel-writes", len(big), false, true},
		{"small-source", 10, true, false},
		{"big-source", len(big), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := &uploads{arrived: make(chan struct{}), handled: make(chan struct{})}
			srv := cloudtest.StartGCS(t, u.wrap)
			name := srv.CreateBucket(t)
			b, other := srv.Open(t, name), srv.OpenGCSBlob(t, name)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			src := &blocked{data: big[:c.size], ctx: ctx}
			if c.fail {
				src.err = errSource
			}
			big := c.size > 1<<20
			if big && !c.fail {
				// Cancel once the server has much of the body.
				go func() {
					<-u.arrived
					cancel()
				}()
			}
			if !big && !c.fail {
				cancel() // the source's end never comes
			}
			opts := &blob.WriterOptions{ContentType: "application/octet-stream"}
			var err error
			if c.writes {
				w, werr := b.NewWriter(ctx, c.name, opts)
				if werr != nil {
					t.Fatal(werr)
				}
				_, err = io.Copy(w, src)
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			} else {
				err = b.Upload(ctx, c.name, src, opts)
			}
			switch {
			case c.fail && !errors.Is(err, errSource):
				t.Errorf("upload: %v, want the source's error", err)
			case !c.fail && !errors.Is(err, context.Canceled):
				t.Errorf("upload: %v, want context.Canceled", err)
			}
			if big {
				<-u.handled
			}
			for _, bk := range []*blob.Bucket{b, other} {
				if ok, err := bk.Exists(t.Context(), c.name); ok || err != nil {
					t.Fatalf("after a failed upload the object exists: %v %v", ok, err)
				}
			}
		})
	}
}

// gs:// with STORAGE_EMULATOR_HOST set opens through backend/open, with
// gocloud's prefix=, and without credentials.
func TestEmulatorURL(t *testing.T) {
	srv := cloudtest.StartGCS(t)
	name := srv.CreateBucket(t)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	ctx := t.Context()
	st, err := open.URL(ctx, "gs://"+name+"?prefix=p/")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.(backend.WholeFile).PutFile(ctx, "f", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Open(t, name).ReadAll(ctx, "p/f"); err != nil || string(got) != "hi" {
		t.Fatalf("p/f: %q, %v", got, err)
	}
	if _, err := open.URL(ctx, "gs://"+name+"?grpc=true"); err == nil || !strings.Contains(err.Error(), "grpc=true") {
		t.Fatalf("grpc=true: %v", err)
	}
}
