package walk

import (
	"context"
	"errors"
	"io/fs"
	"iter"
	"sync"

	"github.com/trovekit/trove/backend"
)

// Ahead yields what Walk yields, in the same order, but lists up to n
// directories at once, ahead of the caller. On a bucket each List is a
// request: a tree of many small directories (a session's sidecars, blob
// fan-out directories) walked one List after another costs the sum of
// their round trips, and GC reads whole trees. n < 2 is Walk. Stopping
// early cancels the listings under way and waits for them.
func Ahead(ctx context.Context, s backend.Storage, dir string, n int) iter.Seq2[backend.Info, error] {
	if n < 2 {
		return backend.Walk(ctx, s, dir)
	}
	return func(yield func(backend.Info, error) bool) {
		walkAhead[struct{}](ctx, s, dir, n, nil, func(info backend.Info, _ *struct{}, err error) bool {
			return yield(info, err)
		})
	}
}

// Files calls f on every file below dir as soon as the listing of its
// directory is in, listing directories and calling f up to n at once in
// all, and yields f's results in Walk's order of the files (directories
// are not yielded). A listing's error other than fs.ErrNotExist is yielded
// where Walk yields it. Stopping early cancels the context f is given and
// waits for the calls under way. A slow listing or call holds up only what
// is yielded after it, not the work on the rest of the tree.
func Files[R any](ctx context.Context, s backend.Storage, dir string, n int, f func(context.Context, backend.Info) R) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		walkAhead(ctx, s, dir, max(n, 1), f, func(info backend.Info, r *R, err error) bool {
			switch {
			case err != nil:
				var zero R
				return yield(zero, err)
			case r != nil:
				return yield(*r, nil)
			}
			return true
		})
	}
}

// walkAhead runs n workers over a queue of listings and calls of f (nil:
// none) and hands emit every entry, in Walk's order, with f's result for a
// file.
func walkAhead[R any](ctx context.Context, s backend.Storage, dir string, n int, f func(context.Context, backend.Info) R, emit func(backend.Info, *R, error) bool) {
	ctx, cancel := context.WithCancel(ctx)
	w := &aheadWalk[R]{s: s, f: f}
	w.cond = sync.NewCond(&w.mu)
	root := w.dir(ctx, dir)
	for range n {
		w.wg.Go(w.work)
	}
	defer func() {
		cancel()
		w.mu.Lock()
		w.stop = true
		w.mu.Unlock()
		w.cond.Broadcast()
		w.wg.Wait()
	}()
	w.emit(root, emit)
}

// aheadWalk is one walkAhead: a queue of work and the workers on it.
type aheadWalk[R any] struct {
	s       backend.Storage
	f       func(context.Context, backend.Info) R
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []func()
	pending int // queued or running
	stop    bool
	wg      sync.WaitGroup
}

// aheadDir is one directory's listing and what was started for each of its
// entries, ready once done is closed.
type aheadDir[R any] struct {
	done  chan struct{}
	infos []backend.Info
	kids  []*aheadDir[R]  // by index in infos, for directories
	files []*aheadFile[R] // by index in infos, for files when f is set
	err   error
}

type aheadFile[R any] struct {
	done chan struct{}
	r    R
}

func (w *aheadWalk[R]) push(task func()) {
	w.mu.Lock()
	w.queue = append(w.queue, task)
	w.pending++
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *aheadWalk[R]) work() {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.pending > 0 && !w.stop {
			w.cond.Wait()
		}
		if w.stop || len(w.queue) == 0 {
			w.mu.Unlock()
			w.cond.Broadcast()
			return
		}
		task := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()
		task()
		w.mu.Lock()
		w.pending--
		w.mu.Unlock()
		w.cond.Broadcast()
	}
}

// dir queues the listing of name; the listing queues its directories and
// files in turn.
func (w *aheadWalk[R]) dir(ctx context.Context, name string) *aheadDir[R] {
	d := &aheadDir[R]{done: make(chan struct{})}
	w.push(func() {
		defer close(d.done)
		for info, err := range w.s.List(ctx, name) {
			if err != nil {
				d.err = err
				break
			}
			d.infos = append(d.infos, info)
		}
		d.kids = make([]*aheadDir[R], len(d.infos))
		if w.f != nil {
			d.files = make([]*aheadFile[R], len(d.infos))
		}
		for i, info := range d.infos {
			switch {
			case info.IsDir:
				d.kids[i] = w.dir(ctx, info.Name)
			case w.f != nil:
				file := &aheadFile[R]{done: make(chan struct{})}
				d.files[i] = file
				w.push(func() {
					defer close(file.done)
					file.r = w.f(ctx, info)
				})
			}
		}
	})
	return d
}

// emit hands d's entries to yield, each directory followed by its tree,
// as walk does; it returns false once yield has.
func (w *aheadWalk[R]) emit(d *aheadDir[R], yield func(backend.Info, *R, error) bool) bool {
	<-d.done
	for i, info := range d.infos {
		var r *R
		if d.files != nil && d.files[i] != nil {
			<-d.files[i].done
			r = &d.files[i].r
		}
		if !yield(info, r, nil) {
			return false
		}
		if kid := d.kids[i]; kid != nil && !w.emit(kid, yield) {
			return false
		}
	}
	if d.err != nil && !errors.Is(d.err, fs.ErrNotExist) {
		return yield(backend.Info{}, nil, d.err)
	}
	return true
}
