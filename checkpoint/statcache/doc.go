// Package statcache is checkpoint's stat cache and its file format: per
// workspace path, the lstat it had and the refs its content was stored
// as, so a snapshot reads only files whose stat changed. It is an
// optimisation only: a missing, stale or damaged cache costs time, never
// correctness, because an entry is trusted only when the stat matches
// exactly and the entry is not racy (git's racy-timestamp rule). The cache
// also keeps the last tree snapshot's tree objects and each directory's
// tree ref (git's cache-tree). A snapshot that changed little writes a
// sidecar of what did instead of the whole file (Cache.Overlay).
// docs/checkpoint.md describes both.
//
// Imports: the standard library, cas (ref algorithms),
// and checkpoint/internal/wire.
package statcache
