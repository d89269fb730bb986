package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/memblob"   // mem:// (trove's memblob://)
	_ "gocloud.dev/blob/s3blob"    // s3://
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"

	"github.com/trovekit/trove/backend"
)

const (
	segDir      = backend.ReservedPrefix + "seg" // top-level tree of segments
	dirMarker   = backend.ReservedPrefix + "dir" // keeps an empty directory
	octets      = "application/octet-stream"     // every object: no sniffing
	segMaxBytes = 8 << 20                        // a writer uploads a segment at least this often
	compactAt   = 8                              // segments a closing writer tolerates
	compactLive = 64                             // segments an open writer tolerates
)

// Storage is a backend.Storage on a blob.Bucket. It is safe for concurrent use.
type Storage struct {
	b      *blob.Bucket
	log    *slog.Logger
	closed atomic.Bool
	opts   options

	keys keyLocks

	mu      sync.Mutex
	notFile map[string]bool // names known not to be files (so may be parents)
}

type options struct {
	log       *slog.Logger
	compactAt int
	compactOn int
	segMax    int
	maxName   int
	maxElem   int
	localDir  string // a fileblob bucket's directory
	timeout   time.Duration
}

// WithLimits lowers the longest name and path element accepted, for stores
// that keep keys as file names.
func WithLimits(maxName, maxElem int) Option {
	return func(o *options) {
		o.maxName = min(max(maxName, 1), o.maxName)
		o.maxElem = min(max(maxElem, 1), o.maxElem)
	}
}

// Option configures a Storage.
type Option func(*options)

// WithLogger sets the logger for background trouble (failed cleanups).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithCompactAt sets how many segments a closing writer leaves before it
// folds them into the base object.
func WithCompactAt(n int) Option { return func(o *options) { o.compactAt = max(n, 0) } }

// WithCompactOpen sets how many segments (n, default 64) a writer that
// stays open gathers before a Sync also folds them into a base. It does so
// when they hold at least as many bytes as the base, so compaction uploads
// about twice what was appended, and in any case at 16n segments, which
// bounds the objects of a file (tiny appends to a huge file then cost more
// uploads).
func WithCompactOpen(n int) Option { return func(o *options) { o.compactOn = max(n, 1) } }

// WithSegmentBytes sets how many buffered bytes make a writer upload a
// segment without waiting for Sync.
func WithSegmentBytes(n int) Option { return func(o *options) { o.segMax = max(n, 1) } }

// New makes a Storage on b. The Storage owns b: Close closes it.
func New(b *blob.Bucket, opts ...Option) (*Storage, error) {
	if b == nil {
		return nil, fmt.Errorf("cloud: nil bucket: %w", backend.ErrNotSupported)
	}
	o := options{log: slog.New(slog.DiscardHandler), compactAt: compactAt, compactOn: compactLive, segMax: segMaxBytes, timeout: DefaultTimeout,
		maxName: backend.MaxNameBytes - len(segDir) - 30, maxElem: backend.MaxElemBytes}
	for _, opt := range opts {
		opt(&o)
	}
	return &Storage{b: b, log: o.log, opts: o, notFile: map[string]bool{}}, nil
}

// Open opens a gocloud bucket URL (s3://, gs://, azblob://, mem://, file://
// and the query options of each driver, such as ?prefix=) as a Storage.
func Open(ctx context.Context, url string, opts ...Option) (*Storage, error) {
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("cloud: open %s: %w", url, err)
	}
	st, err := New(b, opts...)
	if err != nil {
		b.Close()
		return nil, err
	}
	return st, nil
}

// Capabilities of a bucket: durable (but fileblob), shared by processes,
// nothing native.
func (s *Storage) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Durable:      s.opts.localDir == "", // fileblob never fsyncs
		CrossProcess: true,
		MaxNameBytes: s.opts.maxName,
		MaxElemBytes: s.opts.maxElem,
	}
}

// Close closes the bucket. Later calls fail with ErrClosed.
func (s *Storage) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.b.Close()
}

// begin checks what every call checks before any request.
func (s *Storage) begin(ctx context.Context, op, name string, dir bool) error {
	if s.closed.Load() {
		return backend.PathErr(op, name, backend.ErrClosed)
	}
	check := backend.ValidPath
	if dir {
		check = backend.ValidDir
	}
	if err := check(name); err != nil {
		return backend.PathErr(op, name, err)
	}
	if len(name) > s.opts.maxName {
		return backend.PathErr(op, name, fmt.Errorf("%w: name longer than %d bytes", backend.ErrInvalidPath, s.opts.maxName))
	}
	if s.opts.maxElem < backend.MaxElemBytes {
		for elem := range strings.SplitSeq(name, "/") {
			if len(elem) > s.opts.maxElem {
				return backend.PathErr(op, name, fmt.Errorf("%w: element longer than %d bytes", backend.ErrInvalidPath, s.opts.maxElem))
			}
		}
	}
	return backend.CtxErr(ctx, op, name)
}

// fail wraps a driver error with the sentinel its code means.
func fail(op, name string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	case gcerrors.Code(err) == gcerrors.NotFound, errors.Is(err, syscall.ENOTDIR):
		// fileblob says ENOTDIR for a name below a file: that is missing too.
		err = fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	case gcerrors.Code(err) == gcerrors.Canceled:
		err = fmt.Errorf("%w: %w", context.Canceled, err)
	case gcerrors.Code(err) == gcerrors.DeadlineExceeded:
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return backend.PathErr(op, name, err)
}

// lostRace reports whether a conditional (IfNotExist) write of key failed
// because the object exists: FailedPrecondition on S3 and GCS, AlreadyExists
// on others, and InvalidArgument on Azure, which is confirmed by looking,
// since it also means a real bad request.
func (s *Storage) lostRace(ctx context.Context, key string, err error) bool {
	switch gcerrors.Code(err) {
	case gcerrors.FailedPrecondition, gcerrors.AlreadyExists:
		return true
	case gcerrors.InvalidArgument:
		_, aerr := s.attributes(ctx, enc(key))
		return aerr == nil
	}
	return false
}

func isNotFound(err error) bool {
	return gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, syscall.ENOTDIR)
}

// replaced reports a read that met an object being replaced: every server
// answers 416 for a range of an object that shrank since it was resolved,
// each in its own error type.
func replaced(err error) bool {
	var hs interface{ HTTPStatusCode() int } // S3
	var ge *googleapi.Error                  // GCS
	var ae *azcore.ResponseError             // Azure
	switch {
	case errors.As(err, &hs):
		return hs.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
	case errors.As(err, &ge):
		return ge.Code == http.StatusRequestedRangeNotSatisfiable
	case errors.As(err, &ae):
		return ae.StatusCode == http.StatusRequestedRangeNotSatisfiable
	}
	return false
}

// segPrefix is the key prefix of name's segments and bases.
func segPrefix(name string) string { return segDir + "/" + name + "/" + backend.ReservedPrefix }

// keyLocks serialises conditional creates of one key in this process:
// fileblob checks IfNotExist and then renames, so two racing creators could
// both win.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// create uploads r as key unless key exists. lost reports that it did.
func (s *Storage) create(ctx context.Context, key string, r io.Reader) (lost bool, err error) {
	unlock := s.keys.lock(key)
	defer unlock()
	err = s.upload(ctx, key, r, true)
	return err != nil && s.lostRace(ctx, key, err), err
}

// put uploads r as key, replacing it.
func (s *Storage) put(ctx context.Context, key string, r io.Reader) error {
	return s.upload(ctx, key, r, false)
}

// upload writes r to key. Every write goes through Bucket.Upload, since a
// failed azureblob NewWriter+Close panics; a reader that fails (or ctx
// ending) cancels the upload, so nothing partial becomes visible.
func (s *Storage) upload(ctx context.Context, key string, r io.Reader, ifNotExist bool) error {
	s.clearWay(key)
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(s.opts.timeout, cancel)
	defer wd.stop()
	err := s.b.Upload(uctx, enc(key), &abortReader{ctx: ctx, r: r, cancel: cancel, wd: wd},
		&blob.WriterOptions{ContentType: octets, IfNotExist: ifNotExist})
	if cause := context.Cause(uctx); cause != nil && cause != context.Canceled {
		return cause // the reader's own error, or ctx's
	}
	return err
}

// abortReader cancels an upload when its source fails or ctx ends.
type abortReader struct {
	ctx    context.Context
	r      io.Reader
	cancel context.CancelCauseFunc
	wd     *watchdog // kicked as the upload takes bytes
}

func (a *abortReader) Read(p []byte) (int, error) {
	if err := a.ctx.Err(); err != nil {
		a.cancel(err)
		return 0, err
	}
	n, err := a.r.Read(p)
	if a.wd != nil {
		a.wd.kick()
	}
	if err != nil && err != io.EOF {
		a.cancel(err)
	}
	return n, err
}

// dirPrefix is the key prefix of a directory's children.
func dirPrefix(dir string) string {
	if dir == "." {
		return ""
	}
	return dir + "/"
}

func reserved(base string) bool { return strings.HasPrefix(base, backend.ReservedPrefix) }
