package mem

import (
	"math/rand/v2"
	"time"
)

// Option configures a Storage.
type Option func(*memDriver)

// WithClock sets the clock used for modification times (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(s *memDriver) {
		if now != nil {
			s.now = now
		}
	}
}

// KeepFunc decides how many bytes of a file survive a crash, given how many
// were synced and how many were written. Results are clamped to
// [synced, written]. It is called under the store's lock, in name order, and
// only for files whose durable content is a prefix of what was written.
type KeepFunc func(name string, synced, written int) int

// WithCrashKeep models a disk that may have written back some unsynced
// appends before the crash. Without it, Crash keeps exactly what was synced.
func WithCrashKeep(keep KeepFunc) Option {
	return func(s *memDriver) { s.keep = keep }
}

// RandomKeep returns a KeepFunc that keeps a random prefix between synced and
// written, reproducible for a given seed and sequence of crashes.
func RandomKeep(seed uint64) KeepFunc {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(_ string, synced, written int) int {
		if written <= synced {
			return synced
		}
		return synced + r.IntN(written-synced+1)
	}
}
