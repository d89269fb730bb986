package cloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/trovekit/trove/backend"
)

// checkPlace makes sure a file may live at name: no parent is a file
// (checkParents) and name is not a directory.
func (s *bucketDriver) checkPlace(ctx context.Context, op, name string) error {
	if err := s.checkParents(ctx, op, name); err != nil {
		return err
	}
	dir, err := s.isDir(ctx, name)
	if err != nil {
		return fail(op, name, err)
	}
	if dir {
		return backend.PathErr(op, name, backend.ErrIsDir)
	}
	return nil
}

// replace makes r the content of name in one atomic step. A file without
// segments is one object, replaced in place. A file with segments gets a
// write base: an empty segment claims the next number (so a writer racing
// for it fails instead of merging), the base object under that number holds
// the new content and hides every lower number, and the objects it hides
// are deleted after. Readers see the old file or the new one.
func (s *bucketDriver) replace(ctx context.Context, op, name string, r io.Reader) (int64, error) {
	objs, err := s.listObjs(ctx, name)
	if err != nil {
		return 0, fail(op, name, err)
	}
	cr := &countingReader{r: r}
	if len(objs) == 0 {
		err := s.put(ctx, name, cr)
		return cr.n, fail(op, name, err)
	}
	n, err := s.claim(ctx, name, objs[len(objs)-1].n+1)
	if err != nil {
		return 0, fail(op, name, err)
	}
	if err := s.put(ctx, objKey(name, n, kindWrite), cr); err != nil {
		return cr.n, fail(op, name, err)
	}
	// The object under the name marks that the file exists; leftovers of
	// an unlinked file may be all there was.
	if _, err := s.b.Attributes(ctx, enc(name)); isNotFound(err) {
		if err := s.put(ctx, name, bytes.NewReader(nil)); err != nil {
			return cr.n, fail(op, name, err)
		}
	} else if err != nil {
		return cr.n, fail(op, name, err)
	}
	s.drop(ctx, name, objs)
	return cr.n, nil
}

// claim creates an empty segment at the first number from n on that no
// other writer took: a writer racing for that number then fails instead of
// merging. It returns the number claimed.
func (s *bucketDriver) claim(ctx context.Context, name string, n uint64) (uint64, error) {
	for try := 0; ; try++ {
		lost, err := s.create(ctx, objKey(name, n, kindSeg), bytes.NewReader(nil))
		if err == nil {
			return n, nil
		}
		if !lost || try >= maxRetries {
			return 0, err
		}
		n++
	}
}

// hideLeftovers puts an empty write base above objs, the leftovers of an
// unlinked file, before the name of a new file exists: a writer of the
// old file may still take the number after its last, and a new file that
// numbered from 1 again would read that segment as its own once its
// numbers passed below it. When the name exists by now, its maker hid
// them already (or, writing the name whole, took them as its content): a
// base would hide its bytes instead.
func (s *bucketDriver) hideLeftovers(ctx context.Context, op, name string, objs []obj) error {
	n, err := s.claim(ctx, name, objs[len(objs)-1].n+1)
	if err != nil {
		return fail(op, name, err)
	}
	if _, err := s.b.Attributes(ctx, enc(name)); err == nil {
		return nil
	} else if !isNotFound(err) {
		return fail(op, name, err)
	}
	return fail(op, name, s.put(ctx, objKey(name, n, kindWrite), bytes.NewReader(nil)))
}

type countingReader struct {
	r      io.Reader
	n      int64
	origin int64 // offset of the first Seek, so a rewind resets n
	seeked bool
}

// Seek lets an upload of a seekable source be retried from its start.
func (c *countingReader) Seek(off int64, whence int) (int64, error) {
	sk, ok := c.r.(io.Seeker)
	if !ok {
		return 0, fmt.Errorf("cloud: source cannot seek: %w", errors.ErrUnsupported)
	}
	pos, err := sk.Seek(off, whence)
	if err != nil {
		return pos, err
	}
	if !c.seeked {
		c.origin, c.seeked = pos-c.n, true
	}
	c.n = pos - c.origin
	return pos, nil
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// WriteFrom replaces name with the content of r, streamed.
func (s *bucketDriver) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	const op = "write"
	if err := s.checkPlace(ctx, op, name); err != nil {
		return 0, err
	}
	return s.replace(ctx, op, name, r)
}

// OpenWriter opens name for appending; see the package doc for the layout.
func (s *bucketDriver) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	const op = "open"
	if opt.Exclusive && opt.Fresh {
		return s.createFresh(ctx, name)
	}
	if err := s.checkPlace(ctx, op, name); err != nil {
		return nil, err
	}
	if opt.Exclusive {
		if w, ok, err := s.createWriter(ctx, name); ok || err != nil {
			return w, err
		}
	}
	l, err := s.resolve(ctx, name, true)
	switch {
	case err == nil && opt.Exclusive:
		return nil, backend.PathErr(op, name, fs.ErrExist)
	case err == nil && opt.Truncate:
		if _, err := s.replace(ctx, op, name, bytes.NewReader(nil)); err != nil {
			return nil, err
		}
		if l, err = s.resolve(ctx, name, true); err != nil {
			return nil, fail(op, name, err)
		}
	case err != nil && !isNotFound(err):
		return nil, fail(op, name, err)
	case err != nil:
		// Leftovers of an unlinked file (the claim Unlink leaves, a
		// crash between its deletes, a late segment of its writer) would
		// read as content: hide them, then create the file (only one
		// creator wins), then remove them.
		if len(l.objs) > 0 {
			if err := s.hideLeftovers(ctx, op, name, l.objs); err != nil {
				return nil, err
			}
		}
		lost, cerr := s.create(ctx, name, bytes.NewReader(nil))
		if cerr != nil && (!lost || opt.Exclusive) {
			if lost {
				return nil, backend.PathErr(op, name, fmt.Errorf("%w: %w", fs.ErrExist, cerr))
			}
			return nil, fail(op, name, cerr)
		}
		if cerr == nil && len(l.objs) == 0 {
			// This writer made the file, over nothing: it is empty.
			l = layout{plain: true, parts: []part{{key: name}}, size: 0}
		} else {
			s.drop(ctx, name, l.objs)
			if l, err = s.resolve(ctx, name, true); err != nil {
				return nil, fail(op, name, err)
			}
		}
	}
	// Claim the next number with an empty segment. A writer still holding
	// an older number then fails at its next Sync (ErrLocked), so no number
	// that a compaction or a replacement deleted can be filled again by a
	// writer that does not know the new base hides it.
	next := l.last + 1
	if lost, err := s.create(ctx, objKey(name, next, kindSeg), bytes.NewReader(nil)); err != nil {
		if lost {
			return nil, backend.PathErr(op, name, fmt.Errorf("%w: another writer is appending: %w", backend.ErrLocked, err))
		}
		return nil, fail(op, name, err)
	}
	w := &writer{s: s, ctx: context.WithoutCancel(ctx), name: name, next: next + 1,
		prev: objKey(name, next, kindSeg)}
	w.track(l)
	w.fresh++ // the claim
	w.live++
	// The opener owns the file now (older writers fail at their next
	// Sync): it folds what they left, so that the parts a reader meets
	// stay few while Syncs never fold. Failure costs only reads.
	if err := s.foldLayout(w.ctx, name, l, 0); err != nil {
		s.log.Warn("trove/cloud: compaction at open failed; parts kept", "name", name, "err", err)
	}
	return w, nil
}

// createWriter opens a writer on a new file name when its segment
// directory is empty: the conditional create of the name decides whether it
// is new (fs.ErrExist when not), and a file this writer made has no older
// writer to fence off, so no number is claimed and nothing is read back.
// ok is false when there are segments to look at (the general path).
func (s *bucketDriver) createWriter(ctx context.Context, name string) (w backend.Writer, ok bool, err error) {
	const op = "open"
	objs, err := s.listObjs(ctx, name)
	if err != nil {
		return nil, false, fail(op, name, err)
	}
	if len(objs) > 0 {
		return nil, false, nil
	}
	w, err = s.createFresh(ctx, name)
	return w, true, err
}

// createFresh opens a writer on the new file name, made by the conditional
// create of its object (fs.ErrExist when taken), where nothing needs a
// look: no segments (createWriter looked, or WriterOptions.Fresh says so).
func (s *bucketDriver) createFresh(ctx context.Context, name string) (backend.Writer, error) {
	lost, err := s.create(ctx, name, bytes.NewReader(nil))
	if err != nil {
		if lost {
			return nil, backend.PathErr("open", name, fmt.Errorf("%w: %w", fs.ErrExist, err))
		}
		return nil, fail("open", name, err)
	}
	return &writer{s: s, ctx: context.WithoutCancel(ctx), name: name, next: 1, prev: name}, nil
}

// createOwn creates key write-once with data. A create told the key is
// taken may have met its own object: an upload whose answer was lost (a
// dropped connection, a 5xx after the write) and that the client sent
// again. An object holding exactly data is taken as this writer's: a
// segment holds entries that no other writer writes. Empty data is never
// taken so (an opener's claim is empty).
func (s *bucketDriver) createOwn(ctx context.Context, key string, data []byte) (lost bool, err error) {
	lost, err = s.create(ctx, key, bytes.NewReader(data))
	if !lost || len(data) == 0 {
		return lost, err
	}
	r, rerr := s.b.NewRangeReader(ctx, enc(key), 0, -1, nil)
	if rerr != nil {
		return lost, err
	}
	defer r.Close()
	got, rerr := io.ReadAll(io.LimitReader(r, int64(len(data))+1))
	if rerr == nil && bytes.Equal(got, data) {
		return false, nil
	}
	return lost, err
}

// writer buffers appends and uploads them as one segment per Sync.
type writer struct {
	s     *bucketDriver
	ctx   context.Context
	name  string
	buf   []byte
	next  uint64 // number of the next segment
	prev  string // this writer's last object, which must still exist
	live  int    // parts beyond the base
	fresh int    // segments at the end of the file, after its last tier
	// bytes in the base and in the parts beyond it
	baseBytes, segBytes int64
	err                 error // first upload error, latched
	// The background fold (WithCompactEvery): closed when the last one
	// started ends; syncs since it started.
	folding chan struct{}
	since   int
}

// track takes the counts of a layout: the parts beyond the base, the
// segments after the last tier, and their bytes.
func (w *writer) track(l layout) {
	w.baseBytes, w.segBytes = l.parts[0].size, 0
	w.live, w.fresh = len(l.parts)-1, 0
	for _, pt := range l.parts[1:] {
		w.segBytes += pt.size
		if pt.level == 0 {
			w.fresh++
		} else {
			w.fresh = 0
		}
	}
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= w.s.opts.segMax {
		if err := w.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *writer) Sync() error { return w.flush() }

// flush uploads the buffer as the next segment. A conditional create makes
// a second writer that reached the same number fail instead of merging.
func (w *writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	if w.s.closed.Load() {
		return backend.PathErr("sync", w.name, backend.ErrClosed)
	}
	lost, err := w.s.createOwn(w.ctx, objKey(w.name, w.next, kindSeg), w.buf)
	if err != nil {
		if lost {
			w.err = backend.PathErr("sync", w.name, fmt.Errorf("%w: another writer took segment %d: %w", backend.ErrLocked, w.next, err))
		} else {
			w.err = fail("sync", w.name, err)
		}
		return w.err
	}
	// A compaction or replacement by a writer that opened later may have
	// deleted this number and hidden it under its base; it deleted the
	// number below first (drop goes upwards), so look there. The file's
	// own object is no such number: only a removal deletes it, and a
	// writer on a removed file writes where nobody reads, as on a disk.
	if w.prev != w.name {
		if _, err := w.s.b.Attributes(w.ctx, enc(w.prev)); err != nil {
			// The new segment stays: hidden under a newer base, it is
			// garbage the next fold deletes, and where an opener's fold
			// (which may delete the look's target) already counted it as
			// the file's, deleting it would lose bytes.
			if isNotFound(err) {
				err = fmt.Errorf("%w: another writer compacted, replaced or removed the file", backend.ErrLocked)
			}
			w.err = fail("sync", w.name, err)
			return w.err
		}
	}
	w.prev = objKey(w.name, w.next, kindSeg)
	w.next++
	w.live++
	w.fresh++
	w.segBytes += int64(len(w.buf))
	w.buf = w.buf[:0]
	w.since++
	if every := w.s.opts.compactEvery; every > 0 && w.s.opts.compactOn == 0 && w.since >= every {
		if w.since >= w.s.opts.foldLag*every && w.isFolding() {
			// The folds fell behind (a fast bucket, a slow one to
			// fold on): this Sync waits for the running one, so the
			// parts left to fold, and what a later fold pays for
			// them, stay bounded whatever the file's size.
			<-w.folding
		}
		if !w.isFolding() {
			w.foldBehind()
		}
	}
	if f := w.s.opts.compactOn; f > 0 && w.fresh >= f {
		// A writer asked to fold as it goes (WithCompactOpen). Failure is
		// not the writer's: the segments hold every byte.
		if err := w.fold(); err != nil {
			w.s.log.Warn("trove/cloud: compaction failed; segments kept", "name", w.name, "err", err)
		}
	}
	return nil
}

// foldBehind starts Compact in the background: it leaves alone the
// parts this writer's Syncs look at, so the Syncs go on beside
// it at their two requests and reads of a file open for long stay cheap.
// Failure is not the writer's: the segments hold every byte.
func (w *writer) foldBehind() {
	w.since = 0
	done := make(chan struct{})
	w.folding = done
	go func() {
		defer close(done)
		if err := w.s.Compact(w.ctx, w.name); err != nil {
			w.s.log.Warn("trove/cloud: background compaction failed; parts kept", "name", w.name, "err", err)
		}
	}()
}

// isFolding reports whether a background fold is still running.
func (w *writer) isFolding() bool {
	if w.folding == nil {
		return false
	}
	select {
	case <-w.folding:
		return false
	default:
		return true
	}
}

// fold keeps the file a bounded number of parts at a bounded cost per
// byte, as a log-structured merge does. Once the parts beyond the base hold
// as many bytes as the base, everything is folded into a new base (each
// byte is copied about once more, since the base at least doubles each
// time). Until then, every f segments at the end become one tier of level
// 1, every f tiers of level 1 one of level 2, and so on: a byte is copied
// once per level, log_f(appends since the base) times, whatever the size
// of the file, and a reader meets at most f-1 parts per level.
func (w *writer) fold() error {
	f := w.s.opts.compactOn
	l, err := w.s.resolve(w.ctx, w.name, true)
	if err != nil {
		return fail("compact", w.name, err)
	}
	if l.last != w.next-1 || l.torn() {
		return nil // another writer took a number (not ours to fold), or a torn listing
	}
	w.s.sweep(w.ctx, w.name, l)
	defer func() { w.track(l) }()
	for {
		n := len(l.parts)
		if n-1 < f {
			return nil
		}
		run := l.parts[n-f:]
		level := run[0].level
		if level >= maxLevel || slices.ContainsFunc(run, func(p part) bool { return p.level != level }) || partBytes(run) > maxTierBytes {
			return nil
		}
		t, err := w.s.tier(w.ctx, w.name, l.parts[n-f-1].end, level+1, run)
		if err != nil {
			return err
		}
		if w.prev == run[f-1].key {
			w.prev = t.key
		}
		l.parts = append(l.parts[:n-f], t)
	}
}

// maxTierBytes bounds what a fold of tiers writes: parts are merged, f of
// one level into one of the next, only while the merged part holds at most
// this. So every byte is copied once per level below it (4 levels for 4 KiB
// Syncs: 32 KiB, 256 KiB, 2 MiB tiers), whatever the file's size, and no
// fold uploads more than this at once: what a Sync costs with its folds
// stays flat as the file grows (a whole-file base, rewritten each time the
// file doubled, made a Sync of a 64 MiB file cost 2.6 to 4.4 times one of
// 1 MiB). A reader pays a part per 2 to 4 MiB beyond the lower levels: 64
// MiB grown by 4 KiB Syncs reads in under 60 requests.
const maxTierBytes = 4 << 20

// partBytes is the size of parts together.
func partBytes(parts []part) int64 {
	var n int64
	for _, p := range parts {
		n += p.size
	}
	return n
}

// tier folds run, consecutive parts of one level starting after the number
// from, into one tier of the next level holding the same bytes, then
// deletes them but a claim numbered from+1. Two folds of one run write the
// same bytes, so the loser of the conditional create has nothing to do.
func (s *bucketDriver) tier(ctx context.Context, name string, from uint64, level int, run []part) (part, error) {
	const op = "compact"
	last := run[len(run)-1]
	t := part{key: tierKey(name, last.end, level, from), end: last.end, level: level}
	rd := &partsReader{s: s, ctx: ctx, parts: run}
	defer rd.Close()
	lost, err := s.create(ctx, t.key, rd)
	if err != nil && !lost {
		return part{}, fail(op, name, err)
	}
	var objs []obj
	kept := true // the part before the run stays
	for _, p := range run {
		t.size += p.size
		// A claim (an empty segment: a writer never uploads one) stays
		// while the part below it does, skipped by readers as the tier
		// holds it and deleted by the next base: it fenced off the writer
		// whose last number is below it (from, or a claim of its own in
		// the run), which would otherwise take the number again, find its
		// own last part still there and report bytes the tier hides. A
		// number a writer takes after its own last is never empty.
		if kept = p.level == 0 && p.size == 0 && kept; !kept {
			objs = append(objs, obj{key: p.key})
		}
	}
	s.dropFolded(ctx, name, objs)
	return t, nil
}

// partsReader reads whole parts one after the other; a part that is not
// the size the layout said fails the read.
type partsReader struct {
	s     *bucketDriver
	ctx   context.Context
	parts []part
	cur   objReader
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if len(p.parts) == 0 {
				return 0, io.EOF
			}
			pt := p.parts[0]
			p.parts = p.parts[1:]
			if pt.size == 0 {
				continue
			}
			rr, err := p.s.b.NewRangeReader(p.ctx, enc(pt.key), 0, -1, nil)
			if err != nil {
				return 0, err
			}
			if rr.Size() != pt.size {
				rr.Close()
				return 0, errReplaced
			}
			p.cur = rr
		}
		n, err := p.cur.Read(b)
		if err == io.EOF {
			p.cur.Close()
			p.cur = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (p *partsReader) Close() error {
	if p.cur != nil {
		return p.cur.Close()
	}
	return nil
}

// Close uploads what is buffered. It folds the file into a base only when
// WithCompactAt asked for that: otherwise the file stays as the open
// writer's folds left it, a bounded number of parts.
func (w *writer) Close() error {
	err := w.flush()
	w.buf = nil
	if w.folding != nil {
		<-w.folding // nothing of the writer's outlives it
	}
	if err != nil {
		return err
	}
	if every := w.s.opts.compactEvery; every > 0 && w.s.opts.compactOn == 0 && w.since >= every && w.s.opts.compactAt < 0 {
		// The Syncs since the last background fold (up to foldLag
		// intervals of them when folds lag) would cost every reader a
		// request each: fold them now, as that fold would have. A
		// failure is not the writer's: the segments hold every byte.
		if err := w.s.Compact(w.ctx, w.name); err != nil {
			w.s.log.Warn("trove/cloud: compaction at close failed; parts kept", "name", w.name, "err", err)
		}
		return nil
	}
	if at := w.s.opts.compactAt; at >= 0 && w.live > at {
		_, _, err := w.s.compact(w.ctx, w.name, w.next-1)
		return err
	}
	return nil
}

// compact folds name's parts into a compaction base under the highest
// number when through, the writer's last number, is still the highest:
// when another writer has taken a higher one, the file is not this
// writer's to fold (its next Sync fails instead). It returns the base's
// key and size ("" when there was nothing to fold).
func (s *bucketDriver) compact(ctx context.Context, name string, through uint64) (key string, size int64, err error) {
	l, err := s.resolve(ctx, name, true)
	if err != nil {
		return "", 0, fail("compact", name, err)
	}
	if l.last != through || l.torn() {
		return "", 0, nil
	}
	key, err = s.compactLayout(ctx, name, l)
	return key, l.size, err
}

// compactLayout folds the parts of l into a compaction base holding the
// same bytes, then deletes everything it holds. Two compactions of one
// state write the same bytes, so the loser of the conditional create has
// nothing to do.
func (s *bucketDriver) compactLayout(ctx context.Context, name string, l layout) (key string, err error) {
	const op = "compact"
	if len(l.parts) < 2 {
		return "", nil
	}
	// need bounds the read at l's bytes even if it must resolve the file
	// again: bytes appended since l belong to numbers above the base's.
	rd := &reader{s: s, ctx: ctx, op: op, name: name, l: l, end: l.size, need: l.size}
	defer rd.Close()
	key = objKey(name, l.end, kindCompact)
	lost, err := s.create(ctx, key, rd)
	if err != nil && !lost {
		return "", fail(op, name, err)
	}
	var held []obj
	for _, o := range l.objs {
		if o.n <= l.end {
			held = append(held, o)
		}
	}
	s.dropFolded(ctx, name, held)
	return key, nil
}

// Compact folds the parts of name (backend.Compacter) but the last two:
// an open writer looks at its last segment but one, or its last, before
// it counts a new one as synced (the new one may already be listed), so
// Compact runs beside a writer without fencing it off.
func (s *bucketDriver) Compact(ctx context.Context, name string) error {
	l, err := s.resolve(ctx, name, true)
	if err != nil {
		return fail("compact", name, err)
	}
	return s.foldLayout(ctx, name, l, 2)
}

// foldLayout folds the parts of l beyond its base but the last keep, as an
// open writer's folds at Sync would have (see writer.fold), in one pass:
// into a new base once they hold as many bytes as the base, else into
// tiers, each made from the parts it holds, so every byte is read once.
func (s *bucketDriver) foldLayout(ctx context.Context, name string, l layout, keep int) error {
	s.sweep(ctx, name, l)
	f := s.opts.compactOn
	if f <= 0 {
		f = compactLive
	}
	if len(l.parts)-keep <= 1 {
		return nil
	}
	beyond := l.parts[1 : len(l.parts)-keep]
	// Parts pushed one by one, every f of one level at the top merged
	// into one of the next level while that holds at most maxTierBytes;
	// only the merges left at the end are written, from the original
	// parts.
	type group struct {
		level int
		parts []part
	}
	var stack []group
	for _, p := range beyond {
		stack = append(stack, group{p.level, []part{p}})
		for n := len(stack); n >= f; n = len(stack) {
			top := stack[n-f:]
			lv := top[0].level
			if lv >= maxLevel || slices.ContainsFunc(top, func(g group) bool { return g.level != lv }) {
				break
			}
			var merged []part
			for _, g := range top {
				merged = append(merged, g.parts...)
			}
			if partBytes(merged) > maxTierBytes {
				break
			}
			stack = append(stack[:n-f], group{lv + 1, merged})
		}
	}
	at := l.parts[0].end
	for _, g := range stack {
		if len(g.parts) > 1 {
			if _, err := s.tier(ctx, name, at, g.level, g.parts); err != nil {
				return err
			}
		}
		at = g.parts[len(g.parts)-1].end
	}
	return nil
}
