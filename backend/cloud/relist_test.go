package cloud

import (
	"context"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
)

// vanishing fails the first short listing (a directory's look) with the
// not-found fileblob gives when an object goes while it walks.
type vanishing struct {
	bucket
	failed bool
}

func (v *vanishing) ListPage(ctx context.Context, token []byte, size int, opts *blob.ListOptions) ([]*blob.ListObject, []byte, error) {
	if size < listPageSize && !v.failed {
		v.failed = true
		_, err := v.bucket.Attributes(ctx, "gone") // a not-found error as the bucket makes them
		return nil, nil, err
	}
	return v.bucket.ListPage(ctx, token, size, opts)
}

// A directory whose look trips over an object vanishing under the listing
// is still a directory: every listing starts again on that, not only the
// whole ones.
func TestShortListingRelists(t *testing.T) {
	ctx := t.Context()
	v := &vanishing{bucket: plain{memblob.OpenBucket(nil)}}
	st := newStorage(v)
	defer st.Close()
	if err := st.WriteFile(ctx, "d/f", []byte("x")); err != nil {
		t.Fatal(err)
	}
	v.failed = false
	info, err := st.Stat(ctx, "d")
	if err != nil || !info.IsDir {
		t.Fatalf("Stat of a directory whose listing met a vanishing object: %+v, %v", info, err)
	}
	if !v.failed {
		t.Fatal("the short listing was not tried")
	}
}
