package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/trovekit/trove/checkpoint/linediff"
	"github.com/trovekit/trove/checkpoint/statcache"
)

// pstate is what one path holds on one side of a comparison: a checkpoint
// or the workspace.
type pstate struct {
	kind   string // "" absent, else TypeFile, TypeSymlink, TypeDir, or "other"
	digest string // files; in the workspace filled lazily (see resolve)
	// base and delta: a checkpoint file stored as a delta (see Entry).
	base, delta string
	mode        fs.FileMode
	target      string
	size        int64  // a file's length
	data        []byte // file content once loaded
	loaded      bool
	st          fileStat // workspace side: the lstat
	ws          bool     // from the workspace
}

func (p *pstate) exists() bool { return p.kind != "" }

func stateOf(e *Entry) pstate {
	if e == nil || !e.Exists {
		return pstate{}
	}
	return pstate{kind: e.EffectiveType(), digest: e.Digest, base: e.Base, delta: e.Delta, mode: e.Mode.FileMode(), target: e.Target, size: e.Size}
}

func wsStateOf(st fileStat) pstate {
	p := pstate{mode: st.Mode.Perm(), st: st, ws: true, size: st.Size}
	switch {
	case st.IsDir():
		p.kind = TypeDir
	case st.IsSymlink():
		p.kind = TypeSymlink
	case st.IsRegular():
		p.kind = TypeFile
	default:
		p.kind = "other"
	}
	return p
}

// change is how one path differs between two sides, counted from side a to
// side b: del lines of a go, ins lines of b come.
type change struct {
	path     string
	a, b     *pstate
	del, ins int
	binary   bool
	modeOnly bool // same content, other permission bits
}

// status names a change the way diff tools do, from a to b.
func (c *change) status() string {
	switch {
	case !c.a.exists():
		return "added"
	case !c.b.exists():
		return "deleted"
	case c.a.kind != c.b.kind:
		return "typechange"
	case c.modeOnly:
		return "mode"
	}
	return "modified"
}

// loader reads content: from the workspace (with the stat cache) or from
// the cas store, verified.
type loader struct {
	m     *Manager
	cache *statcache.Cache
	// like is a digest whose algorithm workspace files are hashed with.
	like string
	pre  *prewriter // may hold checkpoint content loaded ahead
	// diffs keeps the line counters' memory between the files a plan
	// compares (see linediff.Scratch).
	diffs sync.Pool
	// wsBufs keeps the buffers of workspace files compared (see release).
	wsBufs sync.Pool
}

// resolve fills in a workspace file's digest: from the stat cache when the
// stat proves it, else by reading and hashing the file, or, when the plan
// loaded the other side's content ahead (other, a checkpoint's file), by
// comparing the bytes: the file's digest is then other's when they are
// equal, and stays empty when they differ.
func (l *loader) resolve(ctx context.Context, path string, p, other *pstate) error {
	if p.ws && p.kind == TypeSymlink && !p.loaded {
		// A link compares by its target, which the lstat does not hold.
		target, err := l.m.ws.readlink(path)
		if err != nil {
			return err
		}
		p.target, p.loaded = target, true
		return nil
	}
	if !p.ws || p.kind != TypeFile || p.digest != "" {
		return nil
	}
	if ref, ok := l.cache.Lookup(path, p.st, l.m.cfg.racy); ok && sameAlgo(ref, l.like) {
		p.digest = ref
		return nil
	}
	if big(p) {
		// Hashed as it is read: nothing holds a big file whole.
		rc, err := l.m.ws.open(path)
		if err != nil {
			return err
		}
		defer rc.Close()
		ref, err := l.m.blobs.sumLikeReader(l.like, rc)
		if err != nil {
			return err
		}
		p.digest = ref
		return nil
	}
	if err := l.load(ctx, path, p); err != nil {
		return err
	}
	if other != nil && !other.ws && other.kind == TypeFile && !big(other) && l.pre.holds(other.digest) {
		// That content is read for the line counts when the two differ,
		// and the bytes decide what the hash would: no hash of the file.
		if err := l.load(ctx, path, other); err != nil {
			return err
		}
		if bytes.Equal(p.data, other.data) {
			p.digest = other.digest
		}
		return nil
	}
	ref, err := l.m.blobs.sumLike(l.like, p.data)
	if err != nil {
		return err
	}
	p.digest = ref
	return nil
}

// diffMax is the largest file compared line by line; bigger ones count as
// changed with no line counts, and nothing holds them whole.
const diffMax = 8 << 20

func big(p *pstate) bool { return p.kind == TypeFile && p.size > diffMax }

// wsBufMin is the least a workspace file's buffer is made with.
const wsBufMin = 256 << 10

// release drops loaded content once its line counts are known: a rewind
// streams what it writes, so memory stays bounded whatever the files. A
// workspace file's buffer is read into again (nothing keeps its bytes:
// they are hashed and counted, no more): in a process that collects no
// garbage, each file read into fresh memory was a page fault every 4 KiB.
func (l *loader) release(ps ...*pstate) {
	for _, p := range ps {
		if p.data != nil {
			if p.ws {
				b := p.data[:0]
				l.wsBufs.Put(&b)
			}
			p.data, p.loaded = nil, false
		}
	}
}

// verify reads checkpoint-side content through a verifying stream, so a
// missing or corrupt blob stops a rewind before it changes anything,
// without holding the content.
func (l *loader) verify(ctx context.Context, path string, ps ...*pstate) error {
	for _, p := range ps {
		if p.ws || p.kind != TypeFile {
			continue
		}
		rc, err := l.m.openContent(ctx, p.digest, p.base, p.delta)
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if err != nil {
			return fmt.Errorf("%w: content of %q (%s): %w", ErrCorrupt, path, p.digest, err)
		}
	}
	return nil
}

// load reads a file's content into p.
func (l *loader) load(ctx context.Context, path string, p *pstate) error {
	if p.loaded || p.kind != TypeFile {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	if p.ws {
		var buf []byte
		if bp, ok := l.wsBufs.Get().(*[]byte); ok {
			buf = *bp
		}
		if int64(cap(buf)) <= p.size {
			// Room for the next files too: pages never written cost nothing.
			buf = make([]byte, 0, max(p.size+1, wsBufMin))
		}
		data, err = l.m.ws.readFile(path, -1, buf)
	} else if pre, ok := l.pre.content(p.digest); ok {
		data = pre
	} else {
		data, err = l.m.content(ctx, p.digest, p.base, p.delta)
		if err != nil {
			err = fmt.Errorf("%w: content of %q (%s): %w", ErrCorrupt, path, p.digest, err)
		}
	}
	if err != nil {
		return err
	}
	p.data, p.loaded = data, true
	return nil
}

func sameAlgo(a, b string) bool {
	ia, ib := strings.LastIndexByte(a, ':'), strings.LastIndexByte(b, ':')
	return ia > 0 && ib > 0 && a[:ia] == b[:ib]
}

// compare returns how path differs from a to b, or nil when it does not.
// Directories never count as changes of their own (only their mode is
// restored); symlinks count as changed files with no lines.
func (l *loader) compare(ctx context.Context, path string, a, b *pstate) (*change, error) {
	if !a.exists() && !b.exists() {
		return nil, nil
	}
	if err := l.resolve(ctx, path, a, b); err != nil {
		return nil, err
	}
	if err := l.resolve(ctx, path, b, a); err != nil {
		return nil, err
	}
	if a.kind == b.kind {
		switch a.kind {
		case TypeDir:
			return nil, nil
		case TypeSymlink:
			if a.target == b.target {
				return nil, nil
			}
			return &change{path: path, a: a, b: b}, nil
		case TypeFile:
			if a.digest == b.digest {
				if a.mode == b.mode {
					return nil, nil
				}
				return &change{path: path, a: a, b: b, modeOnly: true}, nil
			}
			c := &change{path: path, a: a, b: b}
			if big(a) || big(b) {
				c.binary = true // too big to diff by lines: changed, no counts
				return c, l.verify(ctx, path, a, b)
			}
			if err := l.load(ctx, path, a); err != nil {
				return nil, err
			}
			if err := l.load(ctx, path, b); err != nil {
				return nil, err
			}
			sc, _ := l.diffs.Get().(*linediff.Scratch)
			if sc == nil {
				sc = new(linediff.Scratch)
			}
			c.del, c.ins, c.binary = sc.Stats(a.data, b.data)
			l.diffs.Put(sc)
			l.release(a, b)
			return c, nil
		}
		return &change{path: path, a: a, b: b}, nil
	}
	if a.kind == TypeDir && !b.exists() || b.kind == TypeDir && !a.exists() {
		return nil, nil // a directory alone is not a file change
	}
	c := &change{path: path, a: a, b: b}
	for _, p := range []*pstate{a, b} {
		if p.kind != TypeFile {
			continue
		}
		if big(p) {
			c.binary = true
			if err := l.verify(ctx, path, p); err != nil {
				return nil, err
			}
			continue
		}
		if err := l.load(ctx, path, p); err != nil {
			return nil, err
		}
		defer l.release(p)
		if linediff.IsBinary(p.data) {
			c.binary = true
		} else if p == a {
			c.del = linediff.CountLines(p.data)
		} else {
			c.ins = linediff.CountLines(p.data)
		}
	}
	return c, nil
}

// FileDiff is one changed path between two states.
type FileDiff struct {
	Path       string `json:"path"`
	Status     string `json:"status"` // added, deleted, modified, mode, typechange
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Binary     bool   `json:"binary,omitempty"`
}

// DiffResult lists what changed from one state to another, sorted by path.
type DiffResult struct {
	From       string     `json:"from"` // checkpoint id
	To         string     `json:"to"`   // checkpoint id, or "" for the workspace
	Files      []FileDiff `json:"files"`
	Insertions int        `json:"insertions"`
	Deletions  int        `json:"deletions"`
}

func diffResult(from, to string, changes []*change) *DiffResult {
	r := &DiffResult{From: from, To: to, Files: []FileDiff{}}
	for _, c := range changes {
		r.Files = append(r.Files, FileDiff{Path: c.path, Status: c.status(), Insertions: c.ins, Deletions: c.del, Binary: c.binary})
		r.Insertions += c.ins
		r.Deletions += c.del
	}
	return r
}

// Diff compares checkpoint id with the workspace as it is now: what changed
// since the checkpoint (insertions are lines the workspace has and the
// checkpoint had not). It writes nothing.
func (m *Manager) Diff(ctx context.Context, id string) (*DiffResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.warmBlobs(ctx, false)()
	man, loaded, err := m.loadForPlan(ctx, id)
	if err != nil {
		return nil, err
	}
	pre := newPrewriter(ctx, m, true)
	defer pre.discard()
	p, err := m.plan(ctx, man, loaded, pre)
	if err != nil {
		return nil, err
	}
	// The plan counts from the workspace to the checkpoint; turn it round.
	rev := make([]*change, len(p.changes))
	for i, c := range p.changes {
		rev[i] = &change{path: c.path, a: c.b, b: c.a, del: c.ins, ins: c.del, binary: c.binary, modeOnly: c.modeOnly}
	}
	return diffResult(id, "", rev), nil
}

// DiffCheckpoints compares two checkpoints, from one to the other. A path
// one files checkpoint does not list is unknown to it and not compared; a
// tree checkpoint that does not list a path (and did not skip it) had none.
func (m *Manager) DiffCheckpoints(ctx context.Context, from, to string) (*DiffResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.loadCached(ctx, from)
	if err != nil {
		return nil, err
	}
	b, err := m.loadCached(ctx, to)
	if err != nil {
		return nil, err
	}
	paths := unionPaths(a, b)
	l := &loader{m: m}
	var changes []*change
	for _, p := range paths {
		sa, okA := knownState(a, p)
		sb, okB := knownState(b, p)
		if !okA || !okB {
			continue
		}
		c, err := l.compare(ctx, p, &sa, &sb)
		if err != nil {
			return nil, err
		}
		if c != nil {
			changes = append(changes, c)
		}
	}
	return diffResult(from, to, changes), nil
}

func knownState(man *Manifest, p string) (pstate, bool) {
	if e := man.Find(p); e != nil {
		return stateOf(e), true
	}
	if man.Kind != KindTree {
		return pstate{}, false
	}
	for _, s := range man.Skipped {
		if s.Path == p {
			return pstate{}, false
		}
	}
	return pstate{}, true
}

func unionPaths(ms ...*Manifest) []string {
	seen := make(map[string]bool)
	var out []string
	for _, man := range ms {
		for _, e := range man.Files {
			if !seen[e.Path] {
				seen[e.Path] = true
				out = append(out, e.Path)
			}
		}
	}
	sort.Strings(out)
	return out
}

// errUnsafe formats a refusal about a path.
func errUnsafe(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsafePath}, args...)...)
}

var _ = errors.Is
