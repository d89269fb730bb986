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

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/driver"
)

const (
	segDir       = backend.ReservedPrefix + "seg" // top-level tree of segments
	dirMarker    = backend.ReservedPrefix + "dir" // keeps an empty directory
	octets       = "application/octet-stream"     // every object: no sniffing
	segMaxBytes  = 8 << 20                        // a writer uploads a segment at least this often
	compactLive  = 8                              // fan-out of folds by default
	compactEvery = 16                             // syncs between an open writer's background folds
	foldLag      = 2                              // intervals a Sync runs ahead of a running fold before it waits
	foldGrace    = time.Second                    // how long what a fold replaced stays
)

// Storage is a backend.Storage on a blob.Bucket: the portable layer over
// the driver below. It is safe for concurrent use.
type Storage struct {
	*driver.Portable
	d *bucketDriver
}

var (
	_ backend.Storage   = (*Storage)(nil)
	_ backend.WriteOnce = (*bucketDriver)(nil)
	_ backend.WholeFile = (*bucketDriver)(nil)
)

// bucketDriver is the driver.Driver on a bucket.
type bucketDriver struct {
	b      bucket
	log    *slog.Logger
	closed atomic.Bool
	opts   options

	keys keyLocks

	mu      sync.Mutex
	notFile map[string]bool // names known not to be files (so may be parents)
}

type options struct {
	log          *slog.Logger
	compactAt    int // -1: Close folds nothing
	compactOn    int // 0: Syncs do not fold
	compactEvery int
	foldLag      int           // intervals of compactEvery a Sync runs ahead of a fold
	grace        time.Duration // WithFoldGrace
	segMax       int
	maxName      int
	maxElem      int
	localDir     string // a fileblob bucket's directory
	timeout      time.Duration
	tries        int
	backoff      time.Duration
	status       func(error) int
	del          func(ctx context.Context, key string) error
	emptyDirs    bool // WithEmptyPrefixes
}

// WithDelete gives the Storage a delete of the bucket's keys that makes a
// single request where the gocloud driver makes more: S3's looks at the
// object before each delete, to report a missing one. del need not report
// a missing key. The deletes that do not care (RemoveFile, and those of
// stale parts) go through it. A provider package passes it (backend/open/s3).
func WithDelete(del func(ctx context.Context, key string) error) Option {
	return func(o *options) { o.del = del }
}

// WithEmptyPrefixes is for an engine whose delimited listing can name a
// prefix that no key is under: SeaweedFS keeps a folder its deletes
// emptied for up to two minutes and lists it. Each directory a List finds
// is then confirmed by a one-key listing under it (a request per
// directory; backend/open/s3 turns it on when the engine says it is
// SeaweedFS).
func WithEmptyPrefixes() Option { return func(o *options) { o.emptyDirs = true } }

// WithTimeout bounds each bucket call (default DefaultTimeout; 0 or less:
// no bound). A streaming read or upload is bounded per chunk: it fails when
// no bytes move for d, however long the whole transfer takes. A call that
// runs out fails with an error wrapping ErrTimeout.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = max(d, 0) } }

// WithRetry makes each call that is safe to repeat (reads, stats, listings,
// deletes and whole-object uploads from a source that can be read again,
// never a write-once create) try up to attempts times when it fails
// transiently (a 5xx or 429 answer, a dropped connection, a timed-out
// call), waiting backoff, then twice as long each time, with jitter. The
// default is one attempt: gocloud drivers retry inside a request already.
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(o *options) { o.tries, o.backoff = max(attempts, 1), max(backoff, 0) }
}

// WithHTTPStatus tells how to find the HTTP status in a driver's errors
// (0 if none), for a driver whose error type does not say it by an
// HTTPStatusCode method: a provider package passes it (see backend/open).
func WithHTTPStatus(f func(error) int) Option { return func(o *options) { o.status = f } }

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

// WithCompactAt makes a closing writer fold the file into one base object
// when it has more than n parts beyond the base. By default Close folds
// nothing: the open writer's folds (WithCompactOpen) keep the parts
// bounded, and a fold at Close would read and rewrite the whole file.
func WithCompactAt(n int) Option { return func(o *options) { o.compactAt = max(n, 0) } }

// WithCompactOpen makes an open writer fold at Sync, with fan-out n (at
// least 2; also the fan-out of the folds at open and of Compact, 8 without
// it): every n segments at the end of the file become one tier object,
// every n tiers of a level one of the next level, and once the parts
// beyond the base hold as many bytes as the base, all of it becomes a new
// base. A reader then meets at most n-1 parts per level, however long the
// writer stays open, but one Sync in n pays for a fold. By default a Sync
// is its segment and one look, always: the next opener folds, and
// Compact does when called.
func WithCompactOpen(n int) Option { return func(o *options) { o.compactOn = max(n, 2) } }

// WithCompactEvery makes an open writer start Compact in the background
// every n Syncs (default 16; 0: never), unless it folds at Sync
// (WithCompactOpen). The Sync that starts it does not wait, and later ones
// make their own two requests beside it (the fold leaves the writer's last
// part alone), until 2n Syncs after it started: that one waits for it, so
// folds do not fall behind a fast writer. Close waits for it. So reads of a file a writer keeps open
// for long stay a few requests per level, and a short-lived writer's
// requests are only its own.
func WithCompactEvery(n int) Option { return func(o *options) { o.compactEvery = max(n, 0) } }

// WithFoldGrace sets how long the parts a fold replaced stay after it
// (default 1 second): a later fold deletes them once the object that
// holds their bytes is that old. A reader on any machine lists a file
// and then reads its parts; kept, a part it listed is still there (or
// found again at once), and a listing that is no snapshot (fileblob
// reads a directory in hash order; a listing of pages) never sees a
// fold's deletes without the object that replaced them. It should be
// longer than any one listing takes. 0 deletes them as each fold ends.
func WithFoldGrace(d time.Duration) Option { return func(o *options) { o.grace = max(d, 0) } }

// WithSegmentBytes sets how many buffered bytes make a writer upload a
// segment without waiting for Sync.
func WithSegmentBytes(n int) Option { return func(o *options) { o.segMax = max(n, 1) } }

// New makes a Storage on b. The Storage owns b: Close closes it.
func New(b *blob.Bucket, opts ...Option) (*Storage, error) {
	if b == nil {
		return nil, fmt.Errorf("cloud: nil bucket: %w", backend.ErrNotSupported)
	}
	return newStorage(plain{b}, opts...), nil
}

func newStorage(b bucket, opts ...Option) *Storage {
	o := options{log: slog.New(slog.DiscardHandler), compactAt: -1, compactEvery: compactEvery, foldLag: foldLag, grace: foldGrace, segMax: segMaxBytes,
		maxName: backend.MaxNameBytes - len(segDir) - 30, maxElem: backend.MaxElemBytes,
		timeout: DefaultTimeout, tries: 1, backoff: 100 * time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	if o.del != nil {
		b = blindDelete{bucket: b, del: o.del}
	}
	g := &guard{b: b, timeout: o.timeout, tries: o.tries, backoff: o.backoff, status: o.status}
	d := &bucketDriver{b: g, log: o.log, opts: o, notFile: map[string]bool{}}
	return &Storage{Portable: driver.NewPortable(d), d: d}
}

// Connect is New, then one small listing, so that a bucket that does not
// exist (an error wrapping fs.ErrNotExist), a refused credential or an
// endpoint that does not answer fails here and not at the first use. On
// error b is closed.
func Connect(ctx context.Context, b *blob.Bucket, opts ...Option) (*Storage, error) {
	st, err := New(b, opts...)
	if err != nil {
		if b != nil {
			b.Close()
		}
		return nil, err
	}
	if _, _, err := st.d.b.ListPage(ctx, blob.FirstPageToken, 1, nil); err != nil {
		st.Close()
		if isNotFound(err) {
			return nil, fmt.Errorf("cloud: the bucket (or container) does not exist: %w: %w", fs.ErrNotExist, err)
		}
		return nil, fmt.Errorf("cloud: bucket check: %w", fail("list", ".", err))
	}
	return st, nil
}

// Open opens a gocloud bucket URL with Connect. Only the schemes of the
// gocloud drivers linked in are known: import gocloud.dev/blob/s3blob (or
// a trove provider package, backend/open/s3) for s3:// and so on; gs://
// needs gocloud.dev/blob/gcsblob, since backend/open/gcs registers its own
// driver with backend/open only (open.URL).
func Open(ctx context.Context, url string, opts ...Option) (*Storage, error) {
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("cloud: open %s: %w", url, err)
	}
	return Connect(ctx, b, opts...)
}

// Capabilities of a bucket: durable (but fileblob), shared by processes,
// write-once creates; no native append, rename or locks.
func (s *bucketDriver) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Durable:      s.opts.localDir == "", // fileblob never fsyncs
		CrossProcess: true,
		WriteOnce:    true,
		MaxNameBytes: s.opts.maxName,
		MaxElemBytes: s.opts.maxElem,
	}
}

// Close closes the bucket.
func (s *bucketDriver) Close() error {
	s.closed.Store(true)
	return s.b.Close()
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
func (s *bucketDriver) lostRace(ctx context.Context, key string, err error) bool {
	switch gcerrors.Code(err) {
	case gcerrors.FailedPrecondition, gcerrors.AlreadyExists:
		return true
	case gcerrors.InvalidArgument:
		_, aerr := s.b.Attributes(ctx, enc(key))
		return aerr == nil
	}
	return false
}

func isNotFound(err error) bool {
	return gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, errNoObject)
}

// replaced reports a read that met an object being replaced: every server
// answers 416 for a range of an object that shrank since it was resolved.
func (s *bucketDriver) replaced(err error) bool {
	return httpStatus(err, s.opts.status) == http.StatusRequestedRangeNotSatisfiable
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
func (s *bucketDriver) create(ctx context.Context, key string, r io.Reader) (lost bool, err error) {
	unlock := s.keys.lock(key)
	defer unlock()
	err = s.upload(ctx, key, r, true)
	return err != nil && s.lostRace(ctx, key, err), err
}

// put uploads r as key, replacing it.
func (s *bucketDriver) put(ctx context.Context, key string, r io.Reader) error {
	return s.upload(ctx, key, r, false)
}

// upload writes r to key. Every write goes through Bucket.Upload, since a
// failed azureblob NewWriter+Close panics; a reader that fails (or ctx
// ending) cancels the upload, so nothing partial becomes visible.
func (s *bucketDriver) upload(ctx context.Context, key string, r io.Reader, ifNotExist bool) error {
	s.clearWay(key)
	// key becomes a file: no longer known not to be one. (This, not a
	// removal, is what can make a parent a file: the cache survives
	// unlinks.)
	s.mu.Lock()
	delete(s.notFile, key)
	s.mu.Unlock()
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ar := &abortReader{ctx: ctx, r: r, cancel: cancel, start: -1}
	if sk, ok := r.(io.Seeker); ok {
		if pos, err := sk.Seek(0, io.SeekCurrent); err == nil {
			ar.start = pos
		}
	}
	err := s.b.Upload(uctx, enc(key), ar, &blob.WriterOptions{ContentType: octets, IfNotExist: ifNotExist})
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
	start  int64 // where a seekable source began, else -1
}

func (a *abortReader) rewindable() bool { return a.start >= 0 }

// rewind lets the guard retry the upload from the source's start.
func (a *abortReader) rewind() error {
	if a.start < 0 {
		return fmt.Errorf("cloud: upload source cannot be read again: %w", backend.ErrNotSupported)
	}
	_, err := a.r.(io.Seeker).Seek(a.start, io.SeekStart)
	return err
}

func (a *abortReader) Read(p []byte) (int, error) {
	if err := a.ctx.Err(); err != nil {
		a.cancel(err)
		return 0, err
	}
	n, err := a.r.Read(p)
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
