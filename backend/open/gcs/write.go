package gcs

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"gocloud.dev/blob/driver"
)

// smallUpload is the most an upload reads before it sends: a source that
// ends within it goes with a Content-Length, a longer one streams in
// chunked encoding. Either way it is one request, which GCS applies only
// once the body is complete, so a failed or cancelled upload leaves nothing.
const smallUpload = 1 << 20

// upload is what one object's upload sends besides its bytes.
type upload struct {
	url         string // with the query: upload type, conditions
	meta        []byte // the object resource, JSON
	contentType string
}

func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if err := hook(opts.BeforeWrite); err != nil {
		return nil, err
	}
	meta, err := json.Marshal(struct {
		Name               string            `json:"name"`
		ContentType        string            `json:"contentType,omitempty"`
		CacheControl       string            `json:"cacheControl,omitempty"`
		ContentDisposition string            `json:"contentDisposition,omitempty"`
		ContentEncoding    string            `json:"contentEncoding,omitempty"`
		ContentLanguage    string            `json:"contentLanguage,omitempty"`
		MD5Hash            []byte            `json:"md5Hash,omitempty"`
		Metadata           map[string]string `json:"metadata,omitempty"`
	}{escapeKey(key), contentType, opts.CacheControl, opts.ContentDisposition, opts.ContentEncoding, opts.ContentLanguage, opts.ContentMD5, opts.Metadata})
	if err != nil {
		return nil, err
	}
	q := url.Values{"uploadType": {"multipart"}}
	if opts.IfNotExist {
		// Generation 0 is "no live object": a lost race is 412.
		q.Set("ifGenerationMatch", "0")
	}
	u := b.base + "/upload/storage/v1/b/" + url.PathEscape(b.name) + "/o?" + q.Encode()
	return &writer{ctx: ctx, b: b, up: upload{url: u, meta: meta, contentType: contentType}}, nil
}

// writer uploads an object in one request: the bytes of Upload's reader,
// or of the Writes, which a pipe hands to the request as they come.
type writer struct {
	ctx      context.Context
	b        *bucket
	up       upload
	pw       *io.PipeWriter // from the first Write
	done     chan error     // the piped request's outcome
	uploaded bool           // by Upload, whose outcome is err
	err      error
}

// Upload sends r as the whole object. Its outcome is Close's: blob
// returns an Upload error as is, but gives Close's its gcerrors code.
func (w *writer) Upload(r io.Reader) error {
	w.uploaded = true
	w.err = w.b.send(w.ctx, &w.up, r)
	return nil
}

func (w *writer) Write(p []byte) (int, error) {
	if w.pw == nil {
		pr, pw := io.Pipe()
		w.pw, w.done = pw, make(chan error, 1)
		go func() {
			err := w.b.send(w.ctx, &w.up, pr)
			// Writes after a failure fail with it instead of blocking.
			pr.CloseWithError(cmp.Or(err, io.ErrClosedPipe))
			w.done <- err
		}()
	}
	return w.pw.Write(p)
}

// Close finishes the upload: the object exists once it returns nil.
func (w *writer) Close() error {
	switch {
	case w.uploaded:
		return w.err
	case w.pw == nil:
		return w.b.send(w.ctx, &w.up, http.NoBody)
	}
	w.pw.Close()
	return <-w.done
}

// send uploads src with its metadata as one multipart/related request.
// The closing boundary goes only after src's EOF: a source that fails, or
// a cancelled ctx, aborts the request before GCS has a whole object.
func (b *bucket) send(ctx context.Context, up *upload, src io.Reader) error {
	var rnd [16]byte
	rand.Read(rnd[:])
	boundary := hex.EncodeToString(rnd[:])
	var head strings.Builder
	head.WriteString("--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n")
	head.Write(up.meta)
	head.WriteString("\r\n--" + boundary + "\r\n")
	if up.contentType != "" {
		head.WriteString("Content-Type: " + up.contentType + "\r\n")
	}
	head.WriteString("\r\n")
	tail := "\r\n--" + boundary + "--\r\n"

	first, err := io.ReadAll(io.LimitReader(src, smallUpload+1))
	if err != nil {
		return err
	}
	var body io.Reader
	if len(first) <= smallUpload {
		body = bytes.NewReader(slices.Concat([]byte(head.String()), first, []byte(tail)))
	} else {
		body = io.MultiReader(strings.NewReader(head.String()), bytes.NewReader(first), src, &sealed{ctx, strings.NewReader(tail)})
	}
	hdr := http.Header{"Content-Type": {"multipart/related; boundary=" + boundary}}
	res, err := b.do(ctx, "upload", http.MethodPost, up.url, hdr, body)
	if err != nil {
		return err
	}
	drain(res)
	return nil
}

// sealed is an upload's closing boundary, handed over only while ctx
// lives: a Close that ends the source of an upload cancelled meanwhile
// must not complete it.
type sealed struct {
	ctx  context.Context
	tail io.Reader
}

func (s *sealed) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	return s.tail.Read(p)
}
