// Package s3 registers s3:// with backend/open: import it for its side
// effect to open S3 (and S3-compatible) buckets by URL. The URL's query
// takes gocloud.dev/blob/s3blob's options (region, endpoint, ...); the
// credentials come from the environment, as the AWS SDK finds them.
//
// Imports: the standard library, aws-sdk-go-v2 (aws, aws/middleware,
// service/s3), smithy-go (transport/http),
// gocloud.dev/blob, backend, backend/cloud, backend/open,
// backend/open/localblob and backend/retry.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/backend/open/localblob"
	"github.com/trovekit/trove/backend/retry"
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
			weed, err := SeaweedFS(ctx, client, u.Host, cfg.Timeout)
			for try := 1; err != nil && try < cfg.Attempts && retry.Transient(err, nil); try++ {
				if retry.Backoff(ctx, try, 100*time.Millisecond) != nil {
					break
				}
				weed, err = SeaweedFS(ctx, client, u.Host, cfg.Timeout)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				b.Close() // the bucket check would only wait as long again
				return nil, fmt.Errorf("s3: bucket check: %w", err)
			}
			if weed {
				opts = append(opts, cloud.WithEmptyPrefixes())
			}
		}
		return cloud.Connect(ctx, b, opts...)
	})
}

// SeaweedFS reports whether the bucket name is served by SeaweedFS (its
// answers say "Server: SeaweedFS ..."), whose listings can name a folder
// that its deletes emptied (cloud.WithEmptyPrefixes): one HEAD of the
// bucket, within timeout (0: none; one that ran out wraps cloud.ErrTimeout).
// It says no on any error, and returns the error for the caller to judge
// (a missing bucket is the bucket check's to report).
func SeaweedFS(ctx context.Context, client *s3.Client, name string, timeout time.Duration) (bool, error) {
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, cloud.ErrTimeout)
		defer cancel()
	}
	out, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)})
	if err != nil {
		if parent.Err() == nil && errors.Is(context.Cause(ctx), cloud.ErrTimeout) {
			err = fmt.Errorf("%w: %w", cloud.ErrTimeout, err)
		}
		return false, err
	}
	raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response)
	return ok && strings.HasPrefix(raw.Header.Get("Server"), "SeaweedFS"), nil
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
