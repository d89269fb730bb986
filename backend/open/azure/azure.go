// Package azure registers azblob:// with backend/open: import it for its
// side effect to open Azure Blob Storage containers by URL, with
// gocloud.dev/blob/azureblob's URL options and environment credentials.
//
// Imports: the standard library, azure-sdk-for-go/sdk/azcore,
// gocloud.dev/blob, backend, backend/cloud, backend/open and
// backend/open/localblob.
package azure

import (
	"context"
	"errors"
	"net/url"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/backend/open/localblob"
)

func init() {
	open.Register(azureblob.Scheme, func(ctx context.Context, u *url.URL, cfg open.Config) (backend.Storage, error) {
		b, err := blob.DefaultURLMux().OpenBucketURL(ctx, u)
		if err != nil {
			return nil, err
		}
		return cloud.Connect(ctx, b, append(localblob.Options(cfg), cloud.WithHTTPStatus(Status))...)
	})
}

// Status is the HTTP status of an Azure error, 0 if it carries none: pass
// it to cloud.WithHTTPStatus for a container opened some other way.
func Status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
