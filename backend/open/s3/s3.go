// Package s3 registers s3:// with backend/open: import it for its side
// effect to open S3 (and S3-compatible) buckets by URL. The URL's query
// takes gocloud.dev/blob/s3blob's options (region, endpoint, ...); the
// credentials come from the environment, as the AWS SDK finds them.
//
// Imports: the standard library, aws-sdk-go-v2 (aws, service/s3),
// gocloud.dev/blob, backend, backend/cloud, backend/open and
// backend/open/localblob.
package s3

import (
	"context"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
		opts := localblob.Options(cfg)
		var client *s3.Client
		if b.As(&client) {
			opts = append(opts, cloud.WithDelete(Delete(b, client, u.Host)))
		}
		return cloud.Connect(ctx, b, opts...)
	})
}

// Delete is a delete of b's keys (b is the s3blob bucket name in client)
// in one request, for cloud.WithDelete: s3blob looks at the object before
// each delete, to report a missing one, which S3 does not. A key that
// s3blob would escape goes through b.Delete.
func Delete(b *blob.Bucket, client *s3.Client, name string) func(ctx context.Context, key string) error {
	return func(ctx context.Context, key string) error {
		if strings.Contains(key, "../") || strings.Contains(key, "__0x") {
			return b.Delete(ctx, key)
		}
		_, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(key)})
		return err
	}
}
