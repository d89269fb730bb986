package runlog

import (
	"errors"
	"log/slog"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
)

// Defaults of the options below.
const (
	// DefaultOutputThreshold is the tool output size, in bytes, above which
	// the output goes to the blob store (the size pi session v3 uses for tool
	// results, DESIGN section 4).
	DefaultOutputThreshold = 64 << 10
	// DefaultMaxResolve bounds the outputs readers load back into
	// ToolOutput.ResultRaw; bigger ones stay refs (see OpenOutput).
	DefaultMaxResolve = 64 << 20
	// DefaultMaxLine bounds one line read; longer lines are skipped as
	// corrupt rather than held in memory.
	DefaultMaxLine = 256 << 20
	// headerPrefix is how much of a file the index reads to learn a run's
	// header fields.
	headerPrefix = 4 << 10
)

// Store reads and writes the run logs and state snapshots of one trove
// root. It is safe for concurrent use.
type Store struct {
	st         backend.Storage
	blobs      cas.Blobs
	threshold  int64
	maxResolve int64
	maxLine    int
	now        func() time.Time
	log        *slog.Logger
	syncOn     map[string]bool
}

// Option configures a Store.
type Option func(*Store)

// WithBlobs sets the blob store for large tool outputs. Without one, every
// output is written inline and refs are not resolved on read.
//
// It takes the one blob interface every layer uses (cas.Blobs); both of
// its sides stream, so an output of any size costs bounded memory.
func WithBlobs(b cas.Blobs) Option { return func(s *Store) { s.blobs = b } }

// WithOutputThreshold sets the size in bytes above which a tool output goes
// to the blob store; n <= 0 keeps the default.
func WithOutputThreshold(n int64) Option {
	return func(s *Store) {
		if n > 0 {
			s.threshold = n
		}
	}
}

// WithMaxResolve sets the largest output readers load back from the blob
// store; n <= 0 keeps the default.
func WithMaxResolve(n int64) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxResolve = n
		}
	}
}

// WithMaxLine sets the longest line readers accept; n <= 0 keeps the
// default.
func WithMaxLine(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxLine = n
		}
	}
}

// WithClock sets the clock for timestamps a Writer fills in.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// WithLogger sets where the store reports what it worked around (skipped
// lines, unresolved blobs). The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) {
		if l != nil {
			s.log = l
		}
	}
}

// WithSyncOn adds record types after which a Writer syncs, beyond the
// default points (see Writer).
func WithSyncOn(types ...string) Option {
	return func(s *Store) {
		for _, t := range types {
			s.syncOn[t] = true
		}
	}
}

// New returns a Store on st. It does no I/O.
func New(st backend.Storage, opts ...Option) (*Store, error) {
	if st == nil {
		return nil, errors.New("runlog: nil storage")
	}
	s := &Store{
		st:         st,
		threshold:  DefaultOutputThreshold,
		maxResolve: DefaultMaxResolve,
		maxLine:    DefaultMaxLine,
		now:        time.Now,
		log:        slog.New(slog.DiscardHandler),
		syncOn: map[string]bool{
			TypeHeader:    true,
			TypeRunStatus: true,
			TypeRunError:  true,
			TypeRunEnd:    true,
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}
