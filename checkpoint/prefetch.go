package checkpoint

import (
	"context"
	"sync"

	"github.com/trovekit/trove/checkpoint/statcache"
)

// A tree snapshot's walk is bound by the latency of its lstats, storing the
// files it finds changed by reading, hashing and compressing them: a
// prefetcher stores each as soon as the walk finds it, so the two overlap.
type prefetcher struct {
	m     *Manager
	ctx   context.Context
	batch blobBatch
	limit int64 // the snapshot's size cap, < 0 for none
	cache *statcache.Cache
	jobs  chan prefetchJob
	wg    sync.WaitGroup

	mu     sync.Mutex
	stored map[string]prefetched
}

type prefetchJob struct {
	te   treeEntry
	prev *statcache.Refs // the stat cache's entry of the path: a delta's base
}

// prefetched is a file stored while the walk went on, and the stat it had.
type prefetched struct {
	st fileStat
	e  Entry
}

func (m *Manager) newPrefetcher(ctx context.Context, batch blobBatch, limit int64) *prefetcher {
	p := &prefetcher{m: m, ctx: ctx, batch: batch, limit: limit, cache: m.loadCache(ctx), jobs: make(chan prefetchJob, 64), stored: map[string]prefetched{}}
	// As storeFiles: a cas batch copies what it is put, so a buffer is
	// reused.
	_, reuse := batch.(*rotatingBatch)
	for range m.cfg.workers {
		p.wg.Go(func() {
			var buf []byte
			for j := range p.jobs {
				data, err := m.ws.readFile(j.te.path, limit, buf)
				if reuse && cap(data) <= 1<<20 {
					buf = data[:0]
				}
				if err != nil {
					continue // storeFiles reads it again and says why
				}
				e := fileEntry(j.te.path, j.te.st)
				if m.putContent(ctx, batch, &e, data, j.prev) != nil {
					continue
				}
				p.mu.Lock()
				p.stored[e.Path] = prefetched{st: j.te.st, e: e}
				p.mu.Unlock()
			}
		})
	}
	return p
}

// found is the walk's callback for every entry it keeps (from its
// goroutines): a regular file the stat cache does not vouch for is stored.
// Big files are left to storeFiles, which streams them.
func (p *prefetcher) found(te treeEntry, cached bool) {
	if cached || !te.st.IsRegular() || te.st.Size > diffMax || p.limit >= 0 && te.st.Size > p.limit {
		return
	}
	select {
	case p.jobs <- prefetchJob{te: te, prev: p.cache.PrevRefs(te.path)}:
	case <-p.ctx.Done():
	}
}

// wait ends the prefetch (the walk is over) and returns what was stored, by
// path.
func (p *prefetcher) wait() map[string]prefetched {
	close(p.jobs)
	p.wg.Wait()
	return p.stored
}
