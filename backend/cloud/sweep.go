package cloud

import (
	"context"
	"time"
)

// dropFolded deletes the parts a fold replaced when there is no fold
// grace; else a later fold's sweep deletes them.
func (s *driver) dropFolded(ctx context.Context, name string, objs []obj) {
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
// hidden. An empty segment a tier holds stays, as tier leaves it: it
// fences off the writer whose last number is below it (the next base
// hides it). Nothing beyond the chain's end is touched.
func (s *driver) sweep(ctx context.Context, name string, l layout) {
	if l.plain {
		return
	}
	cutoff := time.Now().Add(-s.opts.grace)
	live := make(map[string]bool, len(l.parts))
	for _, p := range l.parts {
		live[p.key] = true
	}
	var dead []obj
	for _, o := range l.objs {
		if live[o.key] || o.n > l.end {
			continue
		}
		hider, ok := hiderOf(l, o)
		if !ok || hider.mod.After(cutoff) {
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
// sorts before it, or the tier holding o's number. An empty segment held by
// a tier is reported as not hidden (see sweep).
func hiderOf(l layout, o obj) (obj, bool) {
	if cmpObj(o, l.base) < 0 {
		return l.base, true
	}
	if o.kind == kindSeg && o.size == 0 {
		return obj{}, false
	}
	for _, t := range l.tiers {
		if t.from < o.n && o.n <= t.n && t.key != o.key {
			return t, true
		}
	}
	return obj{}, false
}
