package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// DefaultEndpoint is where the JSON API is served.
const DefaultEndpoint = "https://storage.googleapis.com"

// Options configures OpenBucket.
type Options struct {
	// Client sends every request and authenticates it; nil is
	// http.DefaultClient, which sends no credentials.
	Client *http.Client
	// Endpoint is the JSON API's scheme and host (DefaultEndpoint if
	// empty): the API is under its /storage/v1/ and /upload/storage/v1/.
	Endpoint string
}

// OpenBucket is the GCS bucket name through this package's driver: the
// JSON API over net/http, which links none of the Cloud Storage client's
// gRPC and telemetry. It makes no request.
func OpenBucket(name string, opts *Options) (*blob.Bucket, error) {
	b, err := newBucket(name, opts)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(b), nil
}

func newBucket(name string, opts *Options) (*bucket, error) {
	if name == "" {
		return nil, errors.New("gcs: a bucket name is required")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("gcs: endpoint %q is not a URL with a scheme and host", o.Endpoint)
	}
	base := u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/")
	return &bucket{client: o.Client, base: base, name: name}, nil
}

// bucket is a driver.Bucket on the GCS JSON API.
type bucket struct {
	client *http.Client
	base   string // scheme://host, no slash at the end
	name   string
}

// objectURL is the JSON API's URL of key's object, query added.
func (b *bucket) objectURL(key string, q url.Values) string {
	u := b.base + "/storage/v1/b/" + url.PathEscape(b.name) + "/o/" + url.PathEscape(escapeKey(key))
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// do sends a request and makes any answer but 2xx an *Error; on success
// the caller closes the body.
func (b *bucket) do(ctx context.Context, op, method, u string, hdr http.Header, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	res, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode/100 != 2 {
		return nil, responseError(op, res)
	}
	return res, nil
}

// call sends a request whose answer, if out is not nil, is JSON for out.
func (b *bucket) call(ctx context.Context, op, method, u string, out any) error {
	res, err := b.do(ctx, op, method, u, nil, nil)
	if err != nil {
		return err
	}
	if out == nil {
		drain(res)
		return nil
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("gcs: %s: reading the answer: %w", op, err)
	}
	return nil
}

// drain reads the rest of a successful answer, which nothing needs, so
// that its connection is used again; the request has done its work even
// if this fails.
func drain(res *http.Response) {
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
}

// object is the part of the JSON API's object resource the driver reads.
type object struct {
	Name               string            `json:"name"`
	Size               int64             `json:"size,string"`
	Updated            time.Time         `json:"updated"`
	TimeCreated        time.Time         `json:"timeCreated"`
	MD5Hash            []byte            `json:"md5Hash"`
	Etag               string            `json:"etag"`
	ContentType        string            `json:"contentType"`
	ContentEncoding    string            `json:"contentEncoding"`
	ContentLanguage    string            `json:"contentLanguage"`
	ContentDisposition string            `json:"contentDisposition"`
	CacheControl       string            `json:"cacheControl"`
	Metadata           map[string]string `json:"metadata"`
}

func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	var o object
	if err := b.call(ctx, "GET object", http.MethodGet, b.objectURL(key, nil), &o); err != nil {
		return nil, err
	}
	etag := o.Etag
	// Quoted, as gcsblob gives it.
	if !strings.HasPrefix(etag, `W/"`) && !strings.HasPrefix(etag, `"`) && !strings.HasSuffix(etag, `"`) {
		etag = strconv.Quote(etag)
	}
	return &driver.Attributes{
		CacheControl:       o.CacheControl,
		ContentDisposition: o.ContentDisposition,
		ContentEncoding:    o.ContentEncoding,
		ContentLanguage:    o.ContentLanguage,
		ContentType:        o.ContentType,
		Metadata:           o.Metadata,
		CreateTime:         o.TimeCreated,
		ModTime:            o.Updated,
		Size:               o.Size,
		MD5:                o.MD5Hash,
		ETag:               etag,
	}, nil
}

// defaultPageSize is gcsblob's, and the JSON API's most.
const defaultPageSize = 1000

func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if err := hook(opts.BeforeList); err != nil {
		return nil, err
	}
	size := opts.PageSize
	if size == 0 {
		size = defaultPageSize
	}
	q := url.Values{
		"maxResults": {strconv.Itoa(size)},
		// Only what a listing returns: a big bucket's pages stay small.
		"fields": {"items(name,size,updated,md5Hash),prefixes,nextPageToken"},
	}
	if opts.Prefix != "" {
		q.Set("prefix", escapeKey(opts.Prefix))
	}
	if opts.Delimiter != "" {
		q.Set("delimiter", escapeKey(opts.Delimiter))
	}
	if len(opts.PageToken) > 0 {
		q.Set("pageToken", string(opts.PageToken))
	}
	var page struct {
		Items         []object `json:"items"`
		Prefixes      []string `json:"prefixes"`
		NextPageToken string   `json:"nextPageToken"`
	}
	u := b.base + "/storage/v1/b/" + url.PathEscape(b.name) + "/o?" + q.Encode()
	if err := b.call(ctx, "list", http.MethodGet, u, &page); err != nil {
		return nil, err
	}
	out := &driver.ListPage{NextPageToken: []byte(page.NextPageToken)}
	if page.NextPageToken == "" {
		out.NextPageToken = nil
	}
	for _, o := range page.Items {
		out.Objects = append(out.Objects, &driver.ListObject{Key: unescapeKey(o.Name), ModTime: o.Updated, Size: o.Size, MD5: o.MD5Hash})
	}
	for _, p := range page.Prefixes {
		out.Objects = append(out.Objects, &driver.ListObject{Key: unescapeKey(p), IsDir: true})
	}
	// Objects and prefixes come apart; the driver promises one order.
	slices.SortFunc(out.Objects, func(x, y *driver.ListObject) int { return strings.Compare(x.Key, y.Key) })
	return out, nil
}

func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	if err := hook(opts.BeforeDelete); err != nil {
		return err
	}
	return b.call(ctx, "DELETE object", http.MethodDelete, b.objectURL(key, nil), nil)
}

// Copy rewrites src to dst in the bucket, in as many calls as GCS needs.
func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	if err := hook(opts.BeforeCopy); err != nil {
		return err
	}
	dst := url.PathEscape(b.name) + "/o/" + url.PathEscape(escapeKey(dstKey))
	q := url.Values{}
	for {
		var r struct {
			Done         bool   `json:"done"`
			RewriteToken string `json:"rewriteToken"`
		}
		u := b.objectURL(srcKey, nil) + "/rewriteTo/b/" + dst
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		if err := b.call(ctx, "rewrite", http.MethodPost, u, &r); err != nil {
			return err
		}
		if r.Done {
			return nil
		}
		if r.RewriteToken == "" {
			return errors.New("gcs: rewrite: not done and no token to go on with")
		}
		q.Set("rewriteToken", r.RewriteToken)
	}
}

func (b *bucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", fmt.Errorf("signed URLs: %w", errUnimplemented)
}

// hook calls a Before* callback of the options, if any. It can convert to
// no type of this driver's: there are no client types to give.
func hook(f func(asFunc func(any) bool) error) error {
	if f == nil {
		return nil
	}
	return f(func(any) bool { return false })
}

func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode { return errorCode(err) }

// As exposes nothing: the driver has no client types of its own to give.
func (b *bucket) As(any) bool { return false }

// ErrorAs gives an error's *Error.
func (b *bucket) ErrorAs(err error, i any) bool {
	p, ok := i.(**Error)
	return ok && errors.As(err, p)
}

func (b *bucket) Close() error { return nil }
