package gcs

import (
	"context"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/backend/open/localblob"
)

func init() {
	open.Register(gcsblob.Scheme, func(ctx context.Context, u *url.URL, cfg open.Config) (backend.Storage, error) {
		b, err := blob.DefaultURLMux().OpenBucketURL(ctx, u)
		if err != nil {
			return nil, err
		}
		return cloud.Connect(ctx, b, append(localblob.Options(cfg), cloud.WithHTTPStatus(Status))...)
	})
}
