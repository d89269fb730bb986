package checkpoint

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"

	"github.com/trovekit/trove/checkpoint/statcache"
)

// A rewind is bound by the fsync of every file it writes. A prewriter
// starts writing a file to its temporary name (content streamed from the
// blob store, verified, synced) as soon as the plan finds it changed, while
// the plan goes on and the undo checkpoint is taken; apply then only renames
// it into place. A temporary file is no change to the workspace: nothing
// reads or snapshots it, and one left behind is removed (removeStaleTemps).
//
// A dry run (and Diff) writes nothing, but its plan too loads the content
// of the files likely to differ while it walks, for its compare.
type prewriter struct {
	m   *Manager
	ctx context.Context
	dry bool // load content ahead only, write nothing
	sem chan struct{}
	wg  sync.WaitGroup
	// looking is likely's search, which reads the stat cache: it must end
	// before the cache changes (see settle).
	looking sync.WaitGroup

	mu      sync.Mutex
	temps   map[string]string // path -> its temporary file, written
	started map[string]bool
	ahead   map[string]*ahead // by digest: content loaded by likely
	budget  int64             // bytes ahead may still hold
}

// ahead is checkpoint content loaded before the plan compares it; done is
// closed once data (verified) or err is set.
type ahead struct {
	done chan struct{}
	size int64 // charged to the budget
	data []byte
	err  error
}

// aheadBudget bounds the content likely holds in memory at once.
const aheadBudget = 16 << 20

func newPrewriter(ctx context.Context, m *Manager, dry bool) *prewriter {
	return &prewriter{m: m, ctx: ctx, dry: dry, sem: make(chan struct{}, 8), temps: map[string]string{}, started: map[string]bool{}, ahead: map[string]*ahead{}, budget: aheadBudget}
}

// start writes c's checkpoint content to a temporary file beside c.path,
// when every parent of c.path is a real directory already (else apply
// writes it). A failure is left to apply, which tries again.
func (w *prewriter) start(c *change) {
	if w == nil || w.dry || c.b.kind != TypeFile {
		return
	}
	w.write(c, nil)
}

// load reads c's checkpoint content into memory for the compare and, in a
// real rewind, writes it to its temporary file; too big for the budget, it
// is only written (streamed).
func (w *prewriter) load(c *change) {
	if c.b.kind != TypeFile {
		return
	}
	w.mu.Lock()
	_, dup := w.ahead[c.b.digest]
	fits := !dup && c.b.size <= diffMax && c.b.size <= w.budget
	if !fits {
		w.mu.Unlock()
		w.start(c)
		return
	}
	a := &ahead{done: make(chan struct{}), size: c.b.size}
	w.ahead[c.b.digest] = a
	w.budget -= c.b.size
	w.mu.Unlock()
	w.write(c, a)
}

// write runs one write (or, dry, only the load of a) in the background.
func (w *prewriter) write(c *change, a *ahead) {
	w.mu.Lock()
	again := !w.dry && w.started[c.path]
	w.started[c.path] = true
	w.mu.Unlock()
	if again && a == nil {
		return
	}
	w.wg.Go(func() {
		w.sem <- struct{}{}
		defer func() { <-w.sem }()
		var src io.Reader
		if a != nil {
			a.data, a.err = w.m.content(w.ctx, c.b.digest, c.b.base, c.b.delta)
			close(a.done)
			if a.err != nil || w.dry || again {
				return
			}
			src = bytes.NewReader(a.data)
		}
		sp := safeParents{ws: w.m.ws, ok: map[string]bool{}}
		if ok, err := sp.present(c.path); !ok || err != nil {
			return
		}
		if src == nil {
			rc, err := w.m.openContent(w.ctx, c.b.digest, c.b.base, c.b.delta)
			if err != nil {
				return
			}
			defer rc.Close()
			src = rc
		}
		tmp, err := w.m.ws.writeTemp(c.path, src, c.b.mode, w.m.cfg.sync)
		if err != nil {
			return
		}
		w.mu.Lock()
		w.temps[c.path] = tmp
		w.mu.Unlock()
	})
}

// content returns the content of digest that likely loaded, waiting for
// it, and forgets it; ok is false when none was loaded (or it failed: the
// caller loads it again and reports). It waits for likely's search first:
// a file it would load, asked for before the search reached it, was read
// twice. The search reads trees the compare has read already (treeFetch),
// so it is done or nearly by then.
func (w *prewriter) content(digest string) ([]byte, bool) {
	if w == nil {
		return nil, false
	}
	w.looking.Wait()
	w.mu.Lock()
	a, ok := w.ahead[digest]
	delete(w.ahead, digest)
	w.mu.Unlock()
	if !ok {
		return nil, false
	}
	<-a.done
	w.mu.Lock()
	w.budget += a.size
	w.mu.Unlock()
	return a.data, a.err == nil
}

// holds reports whether likely loads (or loaded) the content of digest,
// not taken yet: content would return it.
func (w *prewriter) holds(digest string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.ahead[digest]
	return ok
}

// settle waits for likely's search, which reads the stat cache: the plan
// calls it before it returns, so the cache can change after. The content
// it loaded and the compare did not take is dropped.
func (w *prewriter) settle() {
	if w != nil {
		w.looking.Wait()
		w.mu.Lock()
		clear(w.ahead)
		w.mu.Unlock()
	}
}

// done waits for every write started and returns the temporary files by
// path; apply takes them.
func (w *prewriter) done() map[string]string {
	if w == nil {
		return nil
	}
	w.looking.Wait()
	w.wg.Wait()
	return w.temps
}

// discard removes the temporary files apply did not take (rename removes
// the ones it did from the map).
func (w *prewriter) discard() {
	if w == nil {
		return
	}
	w.looking.Wait()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, tmp := range w.temps {
		_ = w.m.ws.remove(tmp)
		delete(w.temps, p)
	}
}

// take returns the temporary file written for path, if any, and forgets it.
func (w *prewriter) take(path string) (string, bool) {
	if w == nil {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	tmp, ok := w.temps[path]
	delete(w.temps, path)
	return tmp, ok
}

// changedSince reports whether the workspace file at path is no longer
// the one whose stat the last tree snapshot recorded (st): changed since,
// by an edit or by a rewind that put another checkpoint's content back.
// Its content is then anyone's guess, and as likely the checkpoint's as
// not (after a rewind to it, it is): loading it ahead would often be a
// blob decoded and verified for nothing, where the plan loads only what
// it compares. A file gone since is not changed: a rewind recreates it.
func (w *prewriter) changedSince(path string, st fileStat) bool {
	// One stat by path, as the walk's (lstat through the workspace's
	// root opens each parent in turn): a guess needs no more.
	dir, name := ".", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		dir, name = path[:i], path[i+1:]
	}
	ents, err := w.m.ws.statNames(dir, []string{name}, nil)
	return err == nil && len(ents) == 1 && ents[0].st != st
}

// likelyMax bounds the files a rewind writes before its plan says so.
const likelyMax = 64

// likely loads (and a real rewind starts writing), before the plan has
// walked the workspace, the files of tree checkpoint man that differ from
// the last tree snapshot's (their trees differ, then their digests): when
// the workspace is close to that snapshot, as it is after an agent's edits,
// they are what the plan compares and a rewind writes, and their loads and
// fsyncs overlap the walk. The plan decides; apply takes only what it would
// write, at the checkpoint's content.
func (w *prewriter) likely(man *Manifest, cache *statcache.Cache, trees *treeFetch) {
	if w == nil || man.Kind != KindTree || man.Version != ManifestVersion || cache.Last.Tree == "" || cache.TreeRef(".") != cache.Last.Tree {
		return
	}
	w.looking.Go(func() {
		n := 0
		var visit func(dir, ref string, depth int)
		visit = func(dir, ref string, depth int) {
			if ref == cache.TreeRef(dir) || depth > treeMaxDepth || n >= likelyMax || w.ctx.Err() != nil {
				return
			}
			data, err := trees.get(w.ctx, ref)
			if err != nil {
				return // the plan reports it
			}
			kids, err := trees.decode(ref, data)
			if err != nil {
				return
			}
			prefix := dir + "/"
			if dir == "." {
				prefix = ""
			}
			for _, k := range kids {
				if !validName(k.Name, depth == 0) {
					return
				}
				p := prefix + k.Name
				if e := k.Entry; e != nil && e.Exists && e.EffectiveType() == TypeFile && n < likelyMax {
					ce, ok := cache.Entry(p)
					last := ok && cache.ByLast(ce)
					if (!last || cache.RefsOf(ce).Ref != e.Digest) && !(last && w.changedSince(p, ce.St)) {
						n++
						want := stateOf(e)
						w.load(&change{path: p, b: &want})
					}
				}
				if k.Sub != "" {
					visit(p, k.Sub, depth+1)
				}
			}
		}
		visit(".", man.Tree, 0)
	})
}
