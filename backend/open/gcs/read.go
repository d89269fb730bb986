package gcs

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"gocloud.dev/blob/driver"
)

// NewRangeReader reads with alt=media and a Range header. A zero length
// reads the object's metadata only (no bytes to throw away) and, as with
// the official client, whatever the offset.
func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if err := hook(opts.BeforeRead); err != nil {
		return nil, err
	}
	if length == 0 {
		a, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, err
		}
		return &reader{body: http.NoBody, attrs: driver.ReaderAttributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size}}, nil
	}
	hdr := http.Header{}
	switch {
	case length > 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	res, err := b.do(ctx, "GET object", http.MethodGet, b.objectURL(key, url.Values{"alt": {"media"}}), hdr, nil)
	if err != nil {
		return nil, err
	}
	r, err := newReader(res, offset, length)
	if err != nil {
		res.Body.Close()
		return nil, err
	}
	return r, nil
}

// newReader reads res, the answer to a read of length bytes (all if
// negative) from offset.
func newReader(res *http.Response, offset, length int64) (*reader, error) {
	r := &reader{body: res.Body, attrs: driver.ReaderAttributes{ContentType: res.Header.Get("Content-Type"), Size: res.ContentLength}}
	if lm := res.Header.Get("Last-Modified"); lm != "" {
		t, err := http.ParseTime(lm)
		if err != nil {
			return nil, fmt.Errorf("gcs: GET object: Last-Modified %q: %w", lm, err)
		}
		r.attrs.ModTime = t
	}
	switch {
	case res.StatusCode == http.StatusPartialContent:
		// "bytes first-last/size": the object's size is after the slash.
		cr := res.Header.Get("Content-Range")
		_, total, ok := strings.Cut(cr, "/")
		size, err := strconv.ParseInt(total, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("gcs: GET object: Content-Range %q", cr)
		}
		r.attrs.Size = size
	case offset > 0:
		// A whole object for a range would be read from the wrong place.
		return nil, errors.New("gcs: GET object: the server ignored the range")
	case length > 0:
		// A whole object for a range from 0: give no more than asked.
		r.body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(res.Body, length), res.Body}
	default:
		if stored := res.Header.Get("X-Goog-Stored-Content-Length"); r.attrs.Size < 0 && stored != "" {
			r.attrs.Size, _ = strconv.ParseInt(stored, 10, 64)
		}
		r.crc = storedCRC(res)
	}
	return r, nil
}

// storedCRC is the CRC32C GCS gives for the whole stored object, when the
// bytes that come are those it covers (not decompressed on the way).
func storedCRC(res *http.Response) *crcCheck {
	if ce := res.Header.Get("Content-Encoding"); res.Uncompressed || ce != "" && ce != "identity" {
		return nil
	}
	for _, v := range res.Header.Values("X-Goog-Hash") {
		for h := range strings.SplitSeq(v, ",") {
			b64, ok := strings.CutPrefix(strings.TrimSpace(h), "crc32c=")
			if !ok {
				continue
			}
			sum, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || len(sum) != 4 {
				return nil
			}
			return &crcCheck{Hash32: crc32.New(castagnoli), want: binary.BigEndian.Uint32(sum)}
		}
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcCheck is a running CRC32C and the value it must end at.
type crcCheck struct {
	hash.Hash32
	want uint32
}

// reader is an object's bytes from one GET.
type reader struct {
	body  io.ReadCloser
	attrs driver.ReaderAttributes
	crc   *crcCheck // nil: not checked
}

// Read checks a whole object's CRC32C at its end, as the official client
// does: a body cut short or damaged on the way is an error, not data.
func (r *reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if r.crc != nil {
		r.crc.Write(p[:n])
		if err == io.EOF && r.crc.Sum32() != r.crc.want {
			return n, fmt.Errorf("gcs: GET object: CRC32C %08x, want %08x", r.crc.Sum32(), r.crc.want)
		}
	}
	return n, err
}

func (r *reader) Close() error                         { return r.body.Close() }
func (r *reader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *reader) As(any) bool                          { return false }
