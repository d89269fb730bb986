package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"sync"

	"github.com/trovekit/trove/checkpoint/statcache"
)

// storeFiles fills in the digest of the entries at idx: from the stat cache
// when the stat proves the content unchanged, else by reading the file and
// putting it into batch (flushed by writeManifest), with a few workers
// reading and storing at once. A file gone since its lstat, or grown past limit, is marked absent
// (Create) or dropped by the caller (CreateTree). Files in pre (stored while
// the walk went on) with the same stat are not read again. kept is
// lastKept.
func (m *Manager) storeFiles(ctx context.Context, batch blobBatch, man *Manifest, idx []int, sts []fileStat, limit int64, start int64, pre map[string]prefetched, kept bool) error {
	cache := m.loadCache(ctx)
	// The stat cache proves most files of a snapshot after a few edits
	// (5,000 lookups and digests on the cpbench tree, where the snapshot
	// waits): two goroutines take a half each, in path order.
	ck := cacheCheck{m: m, cache: cache, man: man, sts: sts, start: start, pre: pre, kept: kept, stored: map[string]bool{}}
	parts := [2]cacheChecked{}
	split := len(idx) / 2
	if len(idx) < 1024 {
		split = len(idx)
	}
	var half sync.WaitGroup
	half.Go(func() { parts[1] = ck.run(ctx, idx[split:]) })
	parts[0] = ck.run(ctx, idx[:split])
	half.Wait()
	if err := cmp.Or(parts[0].err, parts[1].err); err != nil {
		return err
	}
	jobs, done := append(parts[0].jobs, parts[1].jobs...), append(parts[0].done, parts[1].done...)
	// The last stored version of each changed path: the base of a delta.
	prev := make(map[int]*statcache.Refs, len(jobs))
	for _, i := range jobs {
		if refs := cache.PrevRefs(man.Files[i].Path); refs != nil {
			prev[i] = refs
		}
	}
	m.cfg.log.Debug("checkpoint: storing", "id", man.ID, "files", len(idx), "read", len(jobs), "prefetched", len(done))
	for _, i := range done {
		cache.Put(man.Files[i].Path, sts[i], cacheRefsOf(&man.Files[i]), start)
	}
	if len(jobs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		next    = make(chan int)
		skipped []Skipped
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
			cancel()
		}
		mu.Unlock()
	}
	// A cas batch copies what it is put, so a worker reads every file into
	// one buffer (a first snapshot reads the whole tree); another store
	// may keep what it is given.
	_, reuse := batch.(*rotatingBatch)
	for range min(m.cfg.workers, len(jobs)) {
		wg.Go(func() {
			var buf []byte
			for i := range next {
				e := &man.Files[i]
				if sts[i].Size > diffMax && (limit < 0 || sts[i].Size <= limit) {
					// Streamed: a big file is never held whole.
					if err := m.putStream(ctx, batch, e); err != nil && !isAbsent(err) {
						fail(err)
					} else if err != nil {
						*e = Entry{Path: e.Path}
					}
					continue
				}
				data, err := m.ws.readFile(e.Path, limit, buf)
				if reuse && cap(data) <= 1<<20 {
					buf = data[:0]
				}
				switch {
				case isAbsent(err):
					*e = Entry{Path: e.Path}
					continue
				case errors.Is(err, errTooBig):
					mu.Lock()
					skipped = append(skipped, Skipped{Path: e.Path, Size: sts[i].Size, Reason: "size"})
					mu.Unlock()
					*e = Entry{Path: e.Path}
					continue
				case err != nil:
					fail(err)
					continue
				}
				if err := m.putContent(ctx, batch, e, data, prev[i]); err != nil {
					fail(err)
				}
			}
		})
	}
feed:
	for _, i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	if first != nil {
		return first
	}
	man.Skipped = append(man.Skipped, skipped...)
	for _, i := range jobs {
		if e := &man.Files[i]; e.Exists {
			cache.Put(e.Path, sts[i], cacheRefsOf(e), start)
		}
	}
	return nil
}

// cacheCheck fills in the digests the stat cache proves for storeFiles.
type cacheCheck struct {
	m     *Manager
	cache *statcache.Cache
	man   *Manifest
	sts   []fileStat
	start int64
	pre   map[string]prefetched
	kept  bool
	mu    sync.Mutex
	// stored: refs known to be in the store, this call.
	stored map[string]bool
}

// cacheChecked is what a cacheCheck run leaves to storeFiles: the files
// to read and store (jobs) and those the prefetch stored (done).
type cacheChecked struct {
	jobs, done []int
	err        error
}

// run fills in the digest of each entry at idx the stat cache proves
// (and marks it verified at start), and sorts the rest into jobs and done.
// Runs of it on disjoint entries may go at once.
func (k *cacheCheck) run(ctx context.Context, idx []int) (out cacheChecked) {
	var cur statcache.Cursor
	for _, i := range idx {
		e := &k.man.Files[i]
		if slot := cur.Slot(k.cache, e.Path); slot != nil && statcache.Proves(*slot, k.sts[i], k.m.cfg.racy) {
			ce := *slot
			full := k.cache.RefsOf(ce)
			e.Digest, e.Base, e.Delta = full.Ref, full.Base, full.Delta
			// The stat proves the content, not that its blobs are still
			// stored: a GC after the checkpoints holding them were deleted
			// removes them. A missing one is read and stored again.
			ok := k.kept && k.cache.ByLastAt(ce.Verified)
			if !ok {
				k.mu.Lock()
				var err error
				ok, err = k.m.allStored(ctx, e.ContentRefs(), k.stored)
				k.mu.Unlock()
				if err != nil {
					out.err = err
					return out
				}
			}
			if ok {
				slot.St, slot.Verified = k.sts[i], k.start
				continue
			}
			e.Digest, e.Base, e.Delta = "", "", ""
		}
		if pf, ok := k.pre[e.Path]; ok && pf.st == k.sts[i] {
			*e = pf.e
			out.done = append(out.done, i)
			continue
		}
		out.jobs = append(out.jobs, i)
	}
	return out
}

// putStream stores the file of e through a stream and records its digest
// and length.
func (m *Manager) putStream(ctx context.Context, batch blobBatch, e *Entry) error {
	rc, err := m.ws.open(e.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	ref, n, err := batch.putReader(ctx, rc)
	if err != nil {
		return err
	}
	e.Digest, e.Size = ref, n
	return nil
}

// cacheRefsOf is e's content as the stat cache records it.
func cacheRefsOf(e *Entry) statcache.Refs {
	return statcache.Refs{Ref: e.Digest, Base: e.Base, Delta: e.Delta}
}
