// Package gcs registers gs:// with backend/open: import it for its side
// effect to open Google Cloud Storage buckets by URL, with
// gocloud.dev/blob/gcsblob's URL options and the default credentials.
package gcs

import (
	"context"
	"errors"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/googleapi"

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

// Status is the HTTP status of a GCS error, 0 if it carries none: pass it
// to cloud.WithHTTPStatus for a GCS bucket opened some other way.
func Status(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}
