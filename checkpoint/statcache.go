package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"
)

// The stat cache remembers, per workspace path, the lstat it had and the
// digest its content hashed to, so a snapshot reads only files whose stat
// changed. It is an optimisation only: a missing, stale or damaged cache
// costs time, never correctness, because an entry is trusted only when the
// stat matches exactly and the entry is not racy (see racy).
type statCache struct {
	entries map[string]cacheEntry
}

type cacheEntry struct {
	st       fileStat
	ref      string
	verified int64 // ns: when the snapshot that last hashed or checked it started
}

const cacheMagic = "trove-statcache-1\n"

// Racy windows: how close to a snapshot's start an mtime or ctime must be
// for the stat to prove nothing. Sub-second timestamps come from a clock
// that lags by at most a scheduler tick; whole-second ones may be truncated
// by a second or two (ext3, HFS+, FAT).
const (
	racyFine   = 100 * time.Millisecond
	racyCoarse = 2 * time.Second
)

func newStatCache() *statCache { return &statCache{entries: make(map[string]cacheEntry)} }

// lookup returns the cached digest of path when st proves the content
// unchanged: identical stat and not racy.
func (c *statCache) lookup(path string, st fileStat, window time.Duration) (string, bool) {
	e, ok := c.entries[path]
	if !ok || e.st != st || racy(e, window) {
		return "", false
	}
	return e.ref, true
}

// racy is the racy-git rule: a file whose mtime (or ctime) is not clearly
// before the moment its content was hashed may have been changed again
// within the same timestamp tick, invisibly to stat. Such an entry is
// re-hashed, whatever its stat says.
func racy(e cacheEntry, window time.Duration) bool {
	if window <= 0 {
		window = racyFine
		if e.st.mtime%int64(time.Second) == 0 {
			window = racyCoarse
		}
	}
	limit := e.verified - int64(window)
	return e.st.mtime >= limit || (e.st.ctime != 0 && e.st.ctime >= limit)
}

func (c *statCache) put(path string, st fileStat, ref string, verified int64) {
	c.entries[path] = cacheEntry{st: st, ref: ref, verified: verified}
}

// encode writes the cache: magic, count, entries sorted by path, then a
// sha256 of everything before it.
func (c *statCache) encode() []byte {
	paths := make([]string, 0, len(c.entries))
	for p := range c.entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	b := make([]byte, 0, len(cacheMagic)+len(paths)*128+40)
	b = append(b, cacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(paths)))
	for _, p := range paths {
		e := c.entries[p]
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, uint64(e.st.mode))
		b = binary.AppendVarint(b, e.st.size)
		b = binary.AppendVarint(b, e.st.mtime)
		b = binary.AppendVarint(b, e.st.ctime)
		b = binary.AppendUvarint(b, e.st.ino)
		b = binary.AppendUvarint(b, e.st.dev)
		b = binary.AppendVarint(b, e.verified)
		b = binary.AppendUvarint(b, uint64(len(e.ref)))
		b = append(b, e.ref...)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

var errBadCache = errors.New("stat cache damaged")

// decodeStatCache parses what encode wrote; anything else is errBadCache.
func decodeStatCache(data []byte) (*statCache, error) {
	if len(data) < len(cacheMagic)+sha256.Size || !bytes.HasPrefix(data, []byte(cacheMagic)) {
		return nil, errBadCache
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum", errBadCache)
	}
	r := &reader{b: body[len(cacheMagic):]}
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		return nil, errBadCache
	}
	c := &statCache{entries: make(map[string]cacheEntry, n)}
	for i := uint64(0); i < n && r.err == nil; i++ {
		p := r.str()
		var e cacheEntry
		e.st.mode = fs.FileMode(r.uvarint())
		e.st.size = r.varint()
		e.st.mtime = r.varint()
		e.st.ctime = r.varint()
		e.st.ino = r.uvarint()
		e.st.dev = r.uvarint()
		e.verified = r.varint()
		e.ref = r.str()
		if r.err == nil && validRel(p) == nil && validRef(e.ref) {
			c.entries[p] = e
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errBadCache
	}
	return c, nil
}

// reader decodes varints, latching the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errBadCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadCache
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
