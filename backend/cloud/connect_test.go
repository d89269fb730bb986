package cloud_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/open/azure"
	"github.com/trovekit/trove/backend/open/gcs"
)

// A bucket that does not exist is an error at Connect, wrapping
// fs.ErrNotExist, not an empty store; one that exists connects.
func TestConnectMissingBucket(t *testing.T) {
	type server struct {
		name   string
		open   func(tb testing.TB, name string) *blob.Bucket
		create func(tb testing.TB) *blob.Bucket
		opts   []cloud.Option
	}
	s3 := cloudtest.StartS3(t)
	g := cloudtest.StartGCS(t)
	az := cloudtest.StartAzure(t)
	for _, sv := range []server{
		{"s3", s3.Open, s3.Bucket, nil},
		{"gcs", g.Open, g.Bucket, []cloud.Option{cloud.WithHTTPStatus(gcs.Status)}},
		{"azure", az.Open, az.Bucket, []cloud.Option{cloud.WithHTTPStatus(azure.Status)}},
	} {
		t.Run(sv.name, func(t *testing.T) {
			ctx := t.Context()
			st, err := cloud.Connect(ctx, sv.open(t, "no-such-bucket"), sv.opts...)
			if !errors.Is(err, fs.ErrNotExist) || st != nil {
				t.Fatalf("Connect to a missing bucket: %v, %v; want fs.ErrNotExist", st, err)
			}
			st, err = cloud.Connect(ctx, sv.create(t), sv.opts...)
			if err != nil {
				t.Fatalf("Connect to an existing bucket: %v", err)
			}
			defer st.Close()
			if err := st.WriteFile(ctx, "x", []byte("y")); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("fileblob", func(t *testing.T) {
		st, err := cloud.OpenFileblob(filepath.Join(t.TempDir(), "missing"))
		if !errors.Is(err, fs.ErrNotExist) || st != nil {
			t.Fatalf("OpenFileblob of a missing directory: %v, %v; want fs.ErrNotExist", st, err)
		}
	})
}
