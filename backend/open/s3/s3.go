// Package s3 registers s3:// with backend/open: import it for its side
// effect to open S3 (and S3-compatible) buckets by URL. The URL's query
// takes gocloud.dev/blob/s3blob's options (region, endpoint, ...); the
// credentials come from the environment, as the AWS SDK finds them.
package s3

import (
	"context"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/backend/open/localblob"
)

func init() {
	open.Register(s3blob.Scheme, func(ctx context.Context, u *url.URL, cfg open.Config) (backend.Storage, error) {
		b, err := blob.DefaultURLMux().OpenBucketURL(ctx, u)
		if err != nil {
			return nil, err
		}
		return cloud.Connect(ctx, b, localblob.Options(cfg)...)
	})
}
