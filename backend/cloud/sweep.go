package cloud

import (
	"context"
	"time"
)

// dropFolded deletes the parts a fold replaced when there is no fold
// grace; else a later fold's sweep deletes them.
func (s *bucketDriver) dropFolded(ctx context.Context, name string, objs []obj) {
	if s.opts.grace <= 0 {
		s.drop(ctx, name, objs)
	}
}

// sweep deletes the objects of l that earlier folds left hidden: below the
// base, or held by a tier of the chain, once the object hiding each is
// older than the fold grace by this machine's clock (a server's clock
// ahead of it keeps them longer; one behind it shortens the grace by the
// difference). Deletes go upwards and stop at the first failure, so a
// writer that finds its previous number gone still knows its next may be
// hidden. An empty segment stays while something numbered just below it
// does, as tier leaves it. Nothing beyond the chain's end is touched.
func (s *bucketDriver) sweep(ctx context.Context, name string, l layout) {
	if l.plain {
		return
	}
	cutoff := time.Now().Add(-s.opts.grace)
	live := make(map[string]bool, len(l.parts))
	for _, p := range l.parts {
		live[p.key] = true
	}
	var dead []obj
	stays := map[uint64]bool{0: true} // numbers some object keeps (0: the name's own)
	for _, o := range l.objs {
		hider, ok := hiderOf(l, o)
		// An empty segment stays while anything numbered just below it
		// does: it fences off the writer whose last part that is.
		claim := o.kind == kindSeg && o.size == 0 && o.n > 0 && stays[o.n-1]
		if live[o.key] || o.n > l.end || !ok || hider.mod.After(cutoff) || claim {
			stays[o.n] = true
			continue
		}
		dead = append(dead, o)
	}
	for _, o := range dead {
		if err := s.b.Remove(ctx, enc(o.key)); err != nil && !isNotFound(err) {
			s.log.Warn("trove/cloud: leaving a stale object", "name", name, "key", o.key, "err", err)
			return
		}
	}
}

// hiderOf finds the object of l's chain that hides o: the base, for what
// sorts before it, or the tier holding o's number.
func hiderOf(l layout, o obj) (obj, bool) {
	if cmpObj(o, l.base) < 0 {
		return l.base, true
	}
	for _, t := range l.tiers {
		if t.from < o.n && o.n <= t.n && t.key != o.key {
			return t, true
		}
	}
	return obj{}, false
}
