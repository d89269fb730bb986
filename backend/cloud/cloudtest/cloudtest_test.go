package cloudtest_test

import (
	"bytes"

	"testing"

	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// The S3 server keeps buckets apart and refuses a lost conditional write.
func TestS3Buckets(t *testing.T) {
	srv := cloudtest.StartS3(t)
	ctx := t.Context()
	a, b := srv.Bucket(t), srv.Bucket(t)
	defer a.Close()
	defer b.Close()
	if err := a.WriteAll(ctx, "k", []byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(ctx, "k"); err != nil || ok {
		t.Fatalf("a fresh bucket holds k: %v %v", ok, err)
	}
	err := a.Upload(ctx, "k", bytes.NewReader([]byte("b")), &blob.WriterOptions{IfNotExist: true, ContentType: "text/plain"})
	if err == nil {
		t.Fatal("a conditional write over an existing key succeeded")
	}
	got, err := a.ReadAll(ctx, "k")
	if err != nil || string(got) != "a" {
		t.Fatalf("k = %q, %v", got, err)
	}
}
