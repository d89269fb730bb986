package session

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
)

// A listing's output cache: what a renderer (`trove ls --json`, say)
// wrote for a listing, kept beside the listing index with the state of
// everything the listing read. While that state is unchanged the listing
// would print the same bytes, and the cache prints them instead: no index
// is read, decoded, sorted or encoded again. An editor polling `trove ls
// --json` pays for a listing only after something changed.
//
// The state is each cwd directory's time with its index file's size and
// time, and the size and time of each session file with a writer at work
// (an open marker), as listDir saw them before reading them. A listing of
// an unchanged state reads nothing else (listDir's shortcut), so the cache
// is kept only where directory times are trusted, only when every
// directory listed took that shortcut, and only when no time in the state
// is recent enough for a change to have left it as it was.

const (
	listCachePrefix = ".ls-"
	listCacheKeep   = 8        // cached listings kept; the oldest go
	listCacheBody   = 64 << 20 // a larger output is not kept
	listCacheFormat = 1
)

// listHeader is a cached listing's first line.
type listHeader struct {
	Format int      `json:"trove_listing"`
	Key    string   `json:"key"`
	Dirs   []dirSt  `json:"dirs"`
	Open   []fileSt `json:"open,omitempty"`
	Seen   bool     `json:"seen,omitempty"` // no body: the state was seen once
}

// dirSt is a cwd directory's time and its index file's size (-1: none)
// and time.
type dirSt struct {
	Name    string `json:"name"`
	Mod     int64  `json:"mod"`
	IdxSize int64  `json:"index_size"`
	IdxMod  int64  `json:"index_mod"`
}

// fileSt is a session file's size and time.
type fileSt struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Mod  int64  `json:"mod"`
}

// listRecorder collects how each listDir under a CachedListing left its
// directory.
type listRecorder struct {
	mu    sync.Mutex
	dirs  map[string]bool // listed directory: took the shortcut
	open  []fileSt        // files with a writer, as stated before reading
	other bool            // a listing that cannot be cached happened
}

type recorderKey struct{}

func recorderOf(ctx context.Context) *listRecorder {
	r, _ := ctx.Value(recorderKey{}).(*listRecorder)
	return r
}

// record notes a listed directory: whether its index now matches its time
// and the files with a writer it read.
func (r *listRecorder) record(dir string, shortcut bool, open []backend.Info) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dirs == nil {
		r.dirs = map[string]bool{}
	}
	prev, seen := r.dirs[dir]
	r.dirs[dir] = shortcut && (prev || !seen)
	for _, fi := range open {
		r.open = append(r.open, fileSt{Name: fi.Name, Size: fi.Size, Mod: unixNano(fi.ModTime)})
	}
}

// uncacheable notes a listing the state does not cover (a refresh).
func (r *listRecorder) uncacheable() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.other = true
	r.mu.Unlock()
}

// CachedListing writes to w what render writes, through the listing's
// output cache: when render ran before with the same key and nothing a
// listing reads has changed since, the bytes it wrote then are written
// again and render is not called. key must name everything the output
// depends on besides the sessions (the query, the format, the program's
// version); an empty key disables the cache. The output is kept at the
// second listing of the same state, so the third is served. render must
// list through this store with the ctx it is given. A cache that cannot
// be read or written costs time only: render runs and w gets its output.
func (s *Store) CachedListing(ctx context.Context, key string, w io.Writer, render func(context.Context, io.Writer) error) error {
	caps := s.st.Capabilities()
	if key == "" || !caps.Directories || !caps.CrossProcess {
		return render(ctx, w)
	}
	sum := sha256.Sum256([]byte(key))
	name := backend.Join(IndexDir, listCachePrefix+hex.EncodeToString(sum[:12]))
	before, err := s.dirStates(ctx)
	if err != nil {
		return render(ctx, w)
	}
	served, seen, err := s.replayListing(ctx, name, key, before, w)
	if served || err != nil {
		return err
	}
	rec := &listRecorder{}
	tee := &teeWriter{w: w, keep: seen} // the first sighting keeps no output
	if err := render(context.WithValue(ctx, recorderKey{}, rec), tee); err != nil || seen && !tee.keep {
		return err
	}
	hdr, ok := s.keepable(ctx, key, before, rec)
	if !ok {
		return nil
	}
	// Kept at the second listing of a state: a store that changes between
	// listings (an agent at work) pays for a header, not for the output.
	hdr.Seen = !seen
	line, err := json.Marshal(hdr)
	if err != nil {
		return nil
	}
	data := append(line, '\n')
	if !hdr.Seen {
		data = append(data, tee.buf.Bytes()...)
	}
	if err := backend.PutFile(ctx, s.st, name, data); err != nil {
		s.cfg.log.Debug("trove/session: could not keep a listing", "err", err)
		return nil
	}
	s.trimListings(ctx)
	return nil
}

// teeWriter writes to w and keeps a copy, up to listCacheBody.
type teeWriter struct {
	w    io.Writer
	buf  bytes.Buffer
	keep bool
}

func (t *teeWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if t.keep {
		if t.buf.Len()+len(p) > listCacheBody {
			t.keep = false
			t.buf = bytes.Buffer{}
		} else {
			t.buf.Write(p[:n])
		}
	}
	return n, err
}

// dirStates states every cwd directory and its index, by name.
func (s *Store) dirStates(ctx context.Context) ([]dirSt, error) {
	dirs, err := s.cwdDirs(ctx)
	if err != nil {
		return nil, err
	}
	var out []dirSt
	for _, fi := range dirs {
		d := dirSt{Name: fi.Name, Mod: unixNano(fi.ModTime), IdxSize: -1}
		switch ii, err := s.st.Stat(ctx, indexPath(fi.Name)); {
		case err == nil:
			d.IdxSize, d.IdxMod = ii.Size, unixNano(ii.ModTime)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b dirSt) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// replayListing copies the cached listing name to w if it was made with
// key in the state dirs (and its open files are as they were): served
// false when it cannot (nothing was written to w then), seen when name
// records that state without a listing.
func (s *Store) replayListing(ctx context.Context, name, key string, dirs []dirSt, w io.Writer) (served, seen bool, err error) {
	rc, err := s.st.Open(ctx, name)
	if err != nil {
		return false, false, nil
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 256<<10)
	line, err := br.ReadSlice('\n')
	if err != nil {
		return false, false, nil
	}
	var h listHeader
	if json.Unmarshal(line, &h) != nil || h.Format != listCacheFormat || h.Key != key || !slices.Equal(h.Dirs, dirs) {
		return false, false, nil
	}
	for _, f := range h.Open {
		fi, err := s.st.Stat(ctx, f.Name)
		if err != nil || fi.Size != f.Size || unixNano(fi.ModTime) != f.Mod {
			return false, false, nil
		}
	}
	if h.Seen {
		return false, true, nil
	}
	// From here on w has bytes: an error is the listing's.
	_, err = br.WriteTo(w)
	return true, false, err
}

// keepable returns the header of a listing rendered in the state before,
// if it may be cached: the state is unchanged after it, every directory
// listed took the index's shortcut, and no time is recent.
func (s *Store) keepable(ctx context.Context, key string, before []dirSt, rec *listRecorder) (listHeader, bool) {
	after, err := s.dirStates(ctx)
	if err != nil || !slices.Equal(before, after) {
		return listHeader{}, false
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.other {
		return listHeader{}, false
	}
	now := s.cfg.now()
	old := func(ns int64) bool { return ns == 0 || settled(now, time.Unix(0, ns)) }
	for _, d := range before {
		if shortcut, listed := rec.dirs[d.Name]; listed && !shortcut || !old(d.Mod) || !old(d.IdxMod) {
			return listHeader{}, false
		}
	}
	for _, f := range rec.open {
		if !old(f.Mod) {
			return listHeader{}, false
		}
	}
	open := slices.Clone(rec.open)
	slices.SortFunc(open, func(a, b fileSt) int { return strings.Compare(a.Name, b.Name) })
	return listHeader{Format: listCacheFormat, Key: key, Dirs: before, Open: slices.Compact(open)}, true
}

// trimListings removes the oldest cached listings beyond listCacheKeep.
func (s *Store) trimListings(ctx context.Context) {
	var kept []backend.Info
	for fi, err := range s.st.List(ctx, IndexDir) {
		if err != nil {
			return
		}
		if !fi.IsDir && strings.HasPrefix(fi.Base(), listCachePrefix) {
			kept = append(kept, fi)
		}
	}
	if len(kept) <= listCacheKeep {
		return
	}
	slices.SortFunc(kept, func(a, b backend.Info) int { return b.ModTime.Compare(a.ModTime) })
	for _, fi := range kept[listCacheKeep:] {
		if err := backend.RemoveFile(ctx, s.st, fi.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.cfg.log.Debug("trove/session: could not remove a cached listing", "name", fi.Name, "err", err)
		}
	}
}
