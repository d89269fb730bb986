package open_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/open"
	_ "github.com/trovekit/trove/backend/open/localblob"
	_ "github.com/trovekit/trove/backend/open/s3"
)

func s3URL(endpoint, bucket string) string {
	return "s3://" + bucket + "?endpoint=" + endpoint + "&region=us-east-1&use_path_style=true&anonymous=true"
}

// memblob:// is a fresh in-memory bucket each time.
func TestMemblob(t *testing.T) {
	ctx := t.Context()
	st, err := open.URL(ctx, "memblob://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*cloud.Storage); !ok {
		t.Fatalf("memblob:// opened a %T, want *cloud.Storage", st)
	}
	if err := st.WriteFile(ctx, "a/b", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ReadFile(ctx, "a/b"); err != nil || string(got) != "x" {
		t.Fatalf("read back %q, %v", got, err)
	}
	other, err := open.URL(ctx, "memblob://")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ReadFile(ctx, "a/b"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a second memblob:// store sees the first's file: %v", err)
	}
}

// Every failure returns a nil interface, and the error says why.
func TestErrorsAreNil(t *testing.T) {
	ctx := t.Context()
	srv := cloudtest.StartS3(t)
	for _, c := range []struct {
		url  string
		want error
	}{
		{"memblob://name", nil},
		{"mem://name", nil},
		{"fileblob://" + filepath.ToSlash(filepath.Join(t.TempDir(), "missing")), fs.ErrNotExist},
		{"nope://x", open.ErrUnknownScheme},
		{"file://host/x", nil},
		{s3URL(srv.URL(), "no-such-bucket"), fs.ErrNotExist},
	} {
		st, err := open.URL(ctx, c.url)
		if st != nil {
			t.Errorf("%s: a non-nil Storage %#v with error %v", c.url, st, err)
		}
		if err == nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.url, err, c.want)
		}
	}
}

// An S3 bucket by URL: one that exists opens and works.
func TestS3URL(t *testing.T) {
	ctx := t.Context()
	srv := cloudtest.StartS3(t)
	st, err := open.URL(ctx, s3URL(srv.URL(), srv.CreateBucket(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.WriteFile(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ReadFile(ctx, "k"); err != nil || string(got) != "v" {
		t.Fatalf("read back %q, %v", got, err)
	}
}

// An s3:// store on SeaweedFS, which lists a folder its deletes emptied
// for minutes after, lists what S3 would: open finds the engine out and
// confirms each listed directory (cloud.WithEmptyPrefixes).
func TestSeaweedFSURL(t *testing.T) {
	ctx := t.Context()
	srv := cloudtest.StartSeaweedFS(t)
	st, err := open.URL(ctx, srv.StoreURL(t, srv.CreateBucket(t))+"&anonymous=true")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, f := range []string{"d/e/f", "d/g"} {
		if err := st.WriteFile(ctx, f, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"d/e/f", "d/e"} { // the file, then its directory
		if err := st.Unlink(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for in, err := range st.List(ctx, "d") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, in.Name)
	}
	if strings.Join(names, " ") != "d/g" {
		t.Errorf("List(d) after d/e was removed = %q, want [d/g]", names)
	}
}

// An endpoint that accepts connections and never answers fails the open
// within the timeout, with an error that says it timed out.
func TestDeadEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	st, err := open.URL(t.Context(), s3URL("http://"+ln.Addr().String(), "b"),
		open.WithTimeout(200*time.Millisecond), open.WithAttempts(2))
	if st != nil {
		t.Fatalf("a Storage on a dead endpoint: %v", st)
	}
	if !errors.Is(err, cloud.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("open on a dead endpoint: %v, want a timeout", err)
	}
}

// Register refuses a scheme twice, and the built-in ones.
func TestRegisterTwice(t *testing.T) {
	for _, scheme := range []string{"s3", "file", "memblob"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", scheme)
				}
			}()
			open.Register(scheme, nil)
		}()
	}
}

// A program that opens stores by URL but imports no provider links no
// cloud SDK: it stays small, and s3:// tells it what to import.
func TestFileOnlyLinksNoSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the test program: %v", err)
	}
	const prog = "./testdata/fileonly"
	out, err := exec.Command(gobin, "list", "-deps", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		for _, sdk := range []string{"github.com/aws/", "github.com/Azure/", "cloud.google.com/", "gocloud.dev/blob/s3blob", "gocloud.dev/blob/gcsblob", "gocloud.dev/blob/azureblob"} {
			if strings.HasPrefix(dep, sdk) {
				t.Errorf("a file-only program links %s", dep)
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "fileonly")
	if out, err := exec.Command(gobin, "build", "-o", bin, prog).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 12<<20 {
		t.Errorf("a file-only program is %.1f MB, want under 12", float64(fi.Size())/(1<<20))
	}
	dir := t.TempDir()
	if out, err := exec.Command(bin, "file://"+filepath.ToSlash(dir)).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("file://: %v: %s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "x")); err != nil || string(got) != "ok" {
		t.Fatalf("the program's file: %q, %v", got, err)
	}
	out, err = exec.Command(bin, "s3://bucket").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "github.com/trovekit/trove/backend/open/s3") || !strings.Contains(string(out), "missing: true") {
		t.Fatalf("s3:// without its provider: %v: %s; want the import to add, and Missing", err, out)
	}
}

// TestMissing: where every provider is linked (this test program), no
// scheme is missing; TestFileOnlyLinksNoSDK checks one that is.
func TestMissing(t *testing.T) {
	for scheme, want := range map[string]bool{"gs": false, "azblob": false, "s3": false, "memblob": false, "file": false, "mem": false, "http": false, "": false} {
		if got := open.Missing(scheme); got != want {
			t.Errorf("Missing(%q) = %v, want %v", scheme, got, want)
		}
	}
}
