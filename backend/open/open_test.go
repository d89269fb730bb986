package open_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/open"
)

func TestMemblob(t *testing.T) {
	ctx := context.Background()
	st, err := open.URL(ctx, "memblob://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.WriteFile(ctx, "a/b", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ReadFile(ctx, "a/b"); err != nil || string(got) != "x" {
		t.Fatalf("read back: %q %v", got, err)
	}
}

// On error the Storage is a nil interface, not one holding a nil pointer.
func TestErrorsGiveNilStorage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ftp://x", "file://host/x", filepath.Join(file, "below"), "file://" + filepath.Join(file, "below"),
		"fileblob://" + filepath.Join(file, "below"), "memblob://name", "mem://name"} {
		st, err := open.URL(context.Background(), u)
		if err == nil {
			t.Errorf("%s: no error", u)
			st.Close()
			continue
		}
		if st != nil {
			t.Errorf("%s: error %v with a non-nil Storage %#v", u, err, st)
		}
	}
}

func TestMissingBucket(t *testing.T) {
	cloudtest.SetS3Env(t)
	s3 := cloudtest.StartS3(t)
	s3.CreateBucket(t, "there")
	ctx := context.Background()
	st, err := open.URL(ctx, s3.URL("there"))
	if err != nil {
		t.Fatalf("an existing bucket: %v", err)
	}
	st.Close()
	st, err = open.URL(ctx, s3.URL("not-there"))
	if !errors.Is(err, fs.ErrNotExist) || st != nil {
		t.Fatalf("a missing bucket: %v (storage %v)", err, st)
	}
}

// An endpoint that accepts connections and never answers fails within the
// timeout.
func TestDeadEndpoint(t *testing.T) {
	cloudtest.SetS3Env(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	u := "s3://b?endpoint=http://" + ln.Addr().String() + "&region=us-east-1&use_path_style=true&disable_https=true"
	st, err := open.URL(context.Background(), u, open.WithTimeout(200*time.Millisecond))
	if err == nil {
		st.Close()
		t.Fatal("a dead endpoint opened")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}
