package cas

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/trovekit/trove/backend"
)

// Defaults for the options below.
const (
	DefaultMaxBlobSize   = 1 << 30
	DefaultPackThreshold = 256 << 10
	DefaultPackSize      = 4 << 20
	DefaultStreamBuffer  = 4 << 20
	DefaultGrace         = time.Hour
	DefaultRepackBelow   = 0.5
)

type config struct {
	dir           string
	algo          Algorithm
	maxBlobSize   int64
	packThreshold int64
	packSize      int64
	streamBuffer  int64
	grace         time.Duration
	repackBelow   float64
	autoPack      int
	now           func() time.Time
	log           *slog.Logger
	err           error
}

// Option configures Open.
type Option func(*config)

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("cas: "+format, args...)
	}
}

// WithAlgorithm sets the algorithm Put uses (default SHA256). Refs of either
// algorithm are read whatever this is. BLAKE3 in a build without it
// (Algorithm.Linked) makes Open fail with ErrAlgorithmUnavailable.
func WithAlgorithm(a Algorithm) Option {
	return func(c *config) {
		if err := a.usable(); err != nil {
			c.fail("%w", err)
		}
		c.algo = a
	}
}

// WithDir sets the directory of the store inside the backend (default "blobs").
func WithDir(dir string) Option {
	return func(c *config) {
		if err := backend.ValidPath(dir); err != nil {
			c.fail("dir %q: %v", dir, err)
		}
		c.dir = dir
	}
}

// WithMaxBlobSize bounds the original size of a blob, on Put and on every
// read: a header claiming more, or a stream decompressing to more, is an error
// (ErrTooLarge or ErrCorrupt), never an allocation.
func WithMaxBlobSize(n int64) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("max blob size %d < 1", n)
		}
		c.maxBlobSize = n
	}
}

// WithPackThreshold sets the size below which a Batch packs a blob instead of
// storing it as its own object.
func WithPackThreshold(n int64) Option {
	return func(c *config) {
		if n < 0 {
			c.fail("pack threshold %d < 0", n)
		}
		c.packThreshold = n
	}
}

// WithPackSize sets the stored size at which a Batch closes a pack.
func WithPackSize(n int64) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("pack size %d < 1", n)
		}
		c.packSize = n
	}
}

// WithStreamBuffer sets how much of a PutReader stream is buffered in memory
// before the put switches to a staged upload plus rename. Blobs that fit are
// written once, under their final name.
func WithStreamBuffer(n int64) Option {
	return func(c *config) {
		if n < 1 || n > 1<<30 {
			c.fail("stream buffer %d outside [1, 1GiB]", n)
		}
		c.streamBuffer = n
	}
}

// WithGrace sets GC's default grace period (default one hour): unreferenced
// blobs younger than it are kept, as they may be referenced soon.
func WithGrace(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("grace %v < 0", d)
		}
		c.grace = d
	}
}

// WithRepackBelow sets the live share (by stored bytes) below which GC
// rewrites a pack with only its live blobs (default 0.5).
func WithRepackBelow(f float64) Option {
	return func(c *config) {
		if !(f >= 0 && f <= 1) {
			c.fail("repack share %v outside [0, 1]", f)
		}
		c.repackBelow = f
	}
}

// WithAutoPack sets how many small packs AutoPack lets a store hold
// before it merges them (default DefaultAutoPack); 0 turns it off.
func WithAutoPack(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.fail("autopack limit %d < 0", n)
		}
		c.autoPack = n
	}
}

// WithClock sets the clock GC ages blobs by (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.fail("nil clock")
		}
		c.now = now
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.fail("nil logger")
		}
		c.log = l
	}
}
