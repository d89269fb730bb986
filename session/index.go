package session

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/internal/jsonscan"
	"github.com/trovekit/trove/internal/jsonw"
	"github.com/trovekit/trove/session/tree"
)

// The listing index: one file per cwd directory caching the metadata of
// its sessions, so that listing costs a read of the index, not of every
// session (docs/session-store.md, "Listing index"). It is never the only
// copy of anything: every record is rebuilt from the session files when
// the index is missing, damaged or stale, and deleting it loses nothing.
//
// A record is trusted while the file's size and modification time match
// it. Where directories have trustworthy modification times (a local file
// system), a directory unchanged since the index was written is not even
// listed: a Store writer creates an open marker (<session>.open) beside
// its file when it opens the session and removes it at Close, so a writer
// at work, or killed, always shows, and only its sessions are looked at.
const (
	// IndexDir holds the listing index of each cwd directory, by the
	// directory's name: outside it, so writing it leaves the time of the
	// directory it describes alone.
	IndexDir = SessionsDir + "/.index"
	// OpenSuffix names a session's open marker: <timestamp>_<id>.open.
	OpenSuffix = ".open"

	indexVersion = 1
)

// racyWindow is how long after a directory's time a change may leave that
// time as it was: the file system's granularity. Times with a fraction of
// a second come from a fine clock (ticks of at most 10 ms); whole seconds
// may be a coarse one (FAT keeps 2 s).
func racyWindow(t time.Time) time.Duration {
	if t.Nanosecond() != 0 {
		return 100 * time.Millisecond
	}
	return 3 * time.Second
}

// settled reports whether a time t seen at now is old enough to be
// trusted: a change since would have moved it.
func settled(now, t time.Time) bool { return now.Sub(t) > racyWindow(t) }

func indexPath(dir string) string { return backend.Join(IndexDir, backend.Base(dir)) }

// idxRec is one session file of a directory as the index remembers it.
type idxRec struct {
	base string
	size int64
	mod  int64 // unix nanoseconds
	side int64 // the sidecar directory's time (0 where unknown): meta.json moved
	skip bool  // not a session (no header): remembered so it is not reread
	meta Metadata
	dir  string // the cwd directory, set by listDir (not stored)
}

type dirIndex struct {
	dirMod int64    // the directory's time when listed; 0: not to be trusted
	open   []string // session file bases with an open marker
	recs   map[string]*idxRec
}

// listDir returns the metadata of the sessions in one cwd directory, from
// its index where that is current, rebuilding what is not. fi is the
// directory's Info, read before anything in it.
func (s *Store) listDir(ctx context.Context, dir string, fi backend.Info, refresh bool) ([]*idxRec, error) {
	idx := s.readIndex(ctx, dir)
	caps := s.st.Capabilities()
	dirTimes := caps.Directories && caps.CrossProcess && !fi.ModTime.IsZero()
	changed := false
	// The shortcut: the index was written since the directory last changed.
	shortcut := func() bool { return dirTimes && idx.dirMod != 0 && idx.dirMod == fi.ModTime.UnixNano() }
	rec := recorderOf(ctx)
	var read []backend.Info // files with a writer, as stated before reading them
	if refresh {
		rec.uncacheable()
	}
	if !refresh && shortcut() {
		// Nothing was added or removed: only sessions with a writer at
		// work (or killed) can have changed, and they are read afresh.
		var stale []backend.Info
		for _, base := range idx.open {
			info, err := s.st.Stat(ctx, backend.Join(dir, base))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			stale = append(stale, info)
		}
		changed = idx.moved(stale)
		if err := s.indexFiles(ctx, idx, stale, nil, idx.open); err != nil {
			return nil, err
		}
		read = stale
	} else {
		files := map[string]backend.Info{}
		sides := map[string]int64{}
		var open []string
		for info, err := range s.st.List(ctx, dir) {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			base := info.Base()
			switch {
			case info.IsDir:
				sides[base+".jsonl"] = unixNano(info.ModTime)
			case strings.HasSuffix(base, ".jsonl"):
				files[base] = info
			case strings.HasSuffix(base, OpenSuffix):
				open = append(open, strings.TrimSuffix(base, OpenSuffix)+".jsonl")
			}
		}
		// Stale: a file or sidecar that moved, or one that has a writer
		// or had one when indexed (its meta.json is written at its Close).
		var stale []backend.Info
		for base, info := range files {
			moved := idx.movedFile(info) || idx.recs[base].side != sides[base]
			if moved || slices.Contains(idx.open, base) || slices.Contains(open, base) {
				stale = append(stale, info)
				changed = changed || moved
			}
			if slices.Contains(open, base) {
				read = append(read, info)
			}
		}
		for base := range idx.recs {
			if _, ok := files[base]; !ok {
				delete(idx.recs, base)
				changed = true
			}
		}
		if err := s.indexFiles(ctx, idx, stale, sides, open); err != nil {
			return nil, err
		}
		slices.Sort(open)
		dirMod := int64(0)
		if dirTimes && settled(s.cfg.now(), fi.ModTime) {
			dirMod = fi.ModTime.UnixNano()
		}
		changed = changed || dirMod != idx.dirMod || !slices.Equal(open, idx.open)
		idx.open, idx.dirMod = open, dirMod
	}
	rec.record(dir, shortcut(), read)
	if changed {
		// A cache: failing to write it costs the next listing time only.
		if err := backend.PutFile(ctx, s.st, indexPath(dir), encodeIndex(idx)); err != nil && ctx.Err() == nil {
			s.cfg.log.Warn("trove/session: could not write the listing index", "dir", dir, "err", err)
		}
	}
	out := make([]*idxRec, 0, len(idx.recs))
	for _, r := range idx.recs {
		if !r.skip {
			r.dir = dir
			out = append(out, r)
		}
	}
	return out, nil
}

// moved reports whether any of files differs in size or time from its
// record: reading it again may change what the index says.
func (idx *dirIndex) moved(files []backend.Info) bool {
	return slices.ContainsFunc(files, idx.movedFile)
}

// movedFile reports whether fi has no record or another size or time. A
// record its writer made at Close has no time (mod 0: the writer cannot
// know what time the bucket gave its last write): its size alone tells,
// the file being append-only and the writer the last to write it.
func (idx *dirIndex) movedFile(fi backend.Info) bool {
	r := idx.recs[fi.Base()]
	return r == nil || r.size != fi.Size || r.mod != 0 && r.mod != fi.ModTime.UnixNano()
}

// keepsIndex reports whether writers keep the listing index current: on
// a store without directory times (a bucket) a listing cannot tell that
// a directory is unchanged, and would read every session another machine
// wrote since the index was written.
func (s *Store) keepsIndex() bool { return !s.st.Capabilities().Directories }

// note puts the record of the session m, closed by its writer with its
// file at size bytes, into its directory's index: read, changed and put
// back whole. Of two machines noting at once one record may be lost; a
// listing then reads that session's files and puts it back.
func (s *Store) note(ctx context.Context, m Metadata, size int64) error {
	dir := backend.Dir(m.Path)
	idx := s.readIndex(ctx, dir)
	base := backend.Base(m.Path)
	m.FileSize = size
	r := &idxRec{base: base, size: size, meta: m}
	if old := idx.recs[base]; old != nil {
		r.side = old.side
	}
	idx.recs[base] = r
	idx.open = slices.DeleteFunc(idx.open, func(o string) bool { return o == base })
	idx.dirMod = 0
	return backend.PutFile(ctx, s.st, indexPath(dir), encodeIndex(idx))
}

// indexFiles reads the metadata of files (new or changed since indexed)
// into idx, several at once; sides are the sidecars' times, when listed.
func (s *Store) indexFiles(ctx context.Context, idx *dirIndex, files []backend.Info, sides map[string]int64, open []string) error {
	recs := make([]*idxRec, len(files))
	errs := make([]error, len(files))
	parallel(len(files), 8, func(i int) {
		recs[i], errs[i] = s.indexFile(ctx, files[i], slices.Contains(open, files[i].Base()))
	})
	for i, r := range recs {
		if errs[i] != nil {
			if errors.Is(errs[i], fs.ErrNotExist) {
				continue // deleted meanwhile
			}
			return errs[i]
		}
		if old := idx.recs[r.base]; sides == nil && old != nil {
			r.side = old.side
		} else {
			r.side = sides[r.base]
		}
		idx.recs[r.base] = r
	}
	return nil
}

// forget drops the record of the session file name from its directory's
// index, after its metadata changed without its file changing; the next
// listing reads it afresh. A directory left without sessions loses its
// index.
func (s *Store) forget(ctx context.Context, name string) {
	dir := backend.Dir(name)
	idx := s.readIndex(ctx, dir)
	base := backend.Base(name)
	if _, ok := idx.recs[base]; !ok {
		return
	}
	delete(idx.recs, base)
	idx.dirMod = 0
	var err error
	if len(idx.recs) == 0 {
		err = backend.RemoveFile(ctx, s.st, indexPath(dir))
	} else {
		err = backend.PutFile(ctx, s.st, indexPath(dir), encodeIndex(idx))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.cfg.log.Warn("trove/session: could not update the listing index", "dir", dir, "err", err)
	}
}

// indexFile reads one session's metadata: its sidecar when that is
// current, else counted from the file (open: a writer at work or killed,
// whose sidecar is written at its Close; or a session written by another
// program).
func (s *Store) indexFile(ctx context.Context, fi backend.Info, open bool) (*idxRec, error) {
	r := &idxRec{base: fi.Base(), size: fi.Size, mod: fi.ModTime.UnixNano()}
	info, err := readInfo(ctx, s.st, fi)
	if errors.Is(err, tree.ErrNoHeader) {
		r.skip = true
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := s.metaOf(ctx, info, open)
	if err != nil {
		return nil, err
	}
	m.FileSize = r.size // as a decoded record has it
	r.meta = m
	return r, nil
}

// readIndex reads a directory's index; a missing or damaged one is empty.
func (s *Store) readIndex(ctx context.Context, dir string) *dirIndex {
	idx := &dirIndex{recs: map[string]*idxRec{}}
	// Written whole (WriteFile): one request on a bucket.
	rc, info, err := backend.OpenInfo(ctx, s.st, indexPath(dir))
	if err != nil {
		return idx
	}
	buf := bytes.NewBuffer(make([]byte, 0, max(info.Size, 0)+512))
	_, err = buf.ReadFrom(rc)
	rc.Close()
	data := buf.Bytes()
	if err != nil {
		return idx
	}
	if err := decodeIndex(data, idx); err != nil {
		s.cfg.log.Debug("trove/session: rebuilding a damaged listing index", "dir", dir, "err", err)
		return &dirIndex{recs: map[string]*idxRec{}}
	}
	return idx
}

// The index is JSON lines: a header object, then one array per file:
//
//	{"trove_index":1,"dir_mod":<ns>,"open":["<base>",...]}
//	["<base>",<size>,<mod ns>,<sidecar ns>,<skip 0|1>,"<id>","<cwd>","<title>","<model>",
//	 <created ns>,<updated ns>,<messages>,<turns>,<input>,<output>,<total>,
//	 <cost>,"<exit reason>","<parent id>","<agent name>","<first message>"]
//
// Positional arrays (21 fields) keep it small and quick to read.

func encodeIndex(idx *dirIndex) []byte {
	var b []byte
	b = fmt.Appendf(b, `{"trove_index":%d,"dir_mod":%d,"open":[`, indexVersion, idx.dirMod)
	for i, o := range idx.open {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendString(b, o)
	}
	b = append(b, "]}\n"...)
	bases := make([]string, 0, len(idx.recs))
	for base := range idx.recs {
		bases = append(bases, base)
	}
	slices.Sort(bases)
	for _, base := range bases {
		r := idx.recs[base]
		m := r.meta
		b = append(b, '[')
		b = jsonw.AppendString(b, r.base)
		b = fmt.Appendf(b, ",%d,%d,%d,%d,", r.size, r.mod, r.side, b2i(r.skip))
		for _, s := range []string{m.ID, m.Cwd, m.Title, m.Model} {
			b = jsonw.AppendString(b, s)
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d,%d,%d,%d,%d,%d,%d,", unixNano(m.CreatedAt), unixNano(m.UpdatedAt), m.MessageCount, m.TurnCount, m.InputTokens, m.OutputTokens, m.TotalTokens)
		b = strconv.AppendFloat(b, finite(m.CostUSD), 'g', -1, 64)
		for _, s := range []string{m.ExitReason, m.ParentID, m.AgentName, m.FirstMessage} {
			b = append(b, ',')
			b = jsonw.AppendString(b, s)
		}
		b = append(b, "]\n"...)
	}
	return b
}

// decodeIndex reads an index into idx. The records' strings share data's
// memory, which the caller must leave unchanged.
func decodeIndex(data []byte, idx *dirIndex) error {
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	ms, ok := jsonscan.SplitObject(line)
	if !ok {
		return fmt.Errorf("%w: index header", tree.ErrCorrupt)
	}
	if v, err := strconv.Atoi(string(ms.Get("trove_index"))); err != nil || v != indexVersion {
		return fmt.Errorf("%w: index version %q", tree.ErrCorrupt, ms.Get("trove_index"))
	}
	idx.dirMod, _ = strconv.ParseInt(string(ms.Get("dir_mod")), 10, 64)
	open, _ := jsonscan.SplitArray(ms.Get("open"))
	for _, o := range open {
		if s, ok := jsonscan.String(o); ok {
			idx.open = append(idx.open, s)
		}
	}
	var cwd string // shared by the records of a directory, mostly
	// The records' strings are slices of the index, not an allocation
	// each; the records one array.
	text := unsafe.String(unsafe.SliceData(rest), len(rest))
	recs := make([]idxRec, 0, bytes.Count(rest, []byte("\n"))+1)
	off := 0
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if len(line) == 0 {
			off++
			continue
		}
		d := idxDecoder{b: line, s: text[off : off+len(line)]}
		off += len(line) + 1
		d.expect('[')
		recs = append(recs, idxRec{base: d.str(), size: d.int(), mod: d.int(), side: d.int(), skip: d.int() != 0})
		r := &recs[len(recs)-1]
		m := &r.meta
		m.ID = d.str()
		if cs, ce, esc := d.span(); d.err == nil && (cwd == "" || d.s[cs:ce] != cwd || esc) {
			cwd = d.unquote(cs, ce, esc)
		}
		m.Cwd, m.Title, m.Model = cwd, d.str(), d.str()
		m.CreatedAt, m.UpdatedAt = d.time(), d.time()
		m.MessageCount, m.TurnCount = int(d.int()), int(d.int())
		m.InputTokens, m.OutputTokens, m.TotalTokens = d.int(), d.int(), d.int()
		m.CostUSD = d.float()
		m.ExitReason, m.ParentID, m.AgentName, m.FirstMessage = d.str(), d.str(), d.str(), d.str()
		m.FileSize = r.size
		if d.err != nil || d.i != len(line) || !validBase(r.base) {
			return fmt.Errorf("%w: index record %.40q", tree.ErrCorrupt, line)
		}
		idx.recs[r.base] = r
	}
	return nil
}

// idxDecoder reads the fields of one record in order, keeping the first
// error; the separator after each field is consumed with it.
type idxDecoder struct {
	b   []byte
	s   string // b as a string: fields without escapes are slices of it
	i   int
	err error
}

func (d *idxDecoder) fail() {
	if d.err == nil {
		d.err = tree.ErrCorrupt
	}
	d.i = len(d.b)
}

func (d *idxDecoder) expect(c byte) {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return
	}
	d.fail()
}

// sep consumes the ',' or ']' that ends a field.
func (d *idxDecoder) sep() {
	if d.i < len(d.b) && (d.b[d.i] == ',' || d.b[d.i] == ']') {
		d.i++
		return
	}
	d.fail()
}

// span returns where the inside of the next string field is, still
// escaped, and whether it holds an escape.
func (d *idxDecoder) span() (start, end int, escaped bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		d.fail()
		return 0, 0, false
	}
	start = d.i + 1
	for j := start; j < len(d.b); {
		// The next quote, then whether an escape came before it.
		q := bytes.IndexByte(d.b[j:], '"')
		if q < 0 {
			break
		}
		q += j
		bs := bytes.IndexByte(d.b[j:q], '\\')
		if bs < 0 {
			d.i = q + 1
			d.sep()
			return start, q, escaped
		}
		escaped = true
		j += bs + 2 // past the escape and the byte it escapes
	}
	d.fail()
	return 0, 0, false
}

func (d *idxDecoder) unquote(start, end int, escaped bool) string {
	if !escaped && utf8.ValidString(d.s[start:end]) {
		return d.s[start:end]
	}
	s, ok := jsonscan.String(d.b[start-1 : end+1])
	if !ok {
		d.fail()
	}
	return s
}

func (d *idxDecoder) str() string { return d.unquote(d.span()) }

func (d *idxDecoder) number() []byte {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] != ',' && d.b[d.i] != ']' {
		d.i++
	}
	n := d.b[start:d.i]
	d.sep()
	return n
}

func (d *idxDecoder) int() int64 {
	n := d.number()
	// Digits by hand: ten thousand records hold a dozen numbers each.
	neg := len(n) > 0 && n[0] == '-'
	digits := n
	if neg {
		digits = n[1:]
	}
	if len(digits) == 0 || len(digits) > 19 {
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil && d.err == nil {
			d.err = err
		}
		return v
	}
	// Nanosecond times are 19 digits: in a uint64 they cannot overflow.
	var v uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			if d.err == nil {
				d.err = fmt.Errorf("%w: index number %q", tree.ErrCorrupt, n)
			}
			return 0
		}
		v = v*10 + uint64(c-'0')
	}
	switch {
	case neg && v <= 1<<63:
		return int64(-v)
	case !neg && v < 1<<63:
		return int64(v)
	}
	if d.err == nil {
		d.err = fmt.Errorf("%w: index number %q out of range", tree.ErrCorrupt, n)
	}
	return 0
}

func (d *idxDecoder) float() float64 {
	v, err := strconv.ParseFloat(string(d.number()), 64)
	if err != nil && d.err == nil {
		d.err = err
	}
	return v
}

func (d *idxDecoder) time() time.Time {
	if n := d.int(); n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

// validBase: a session file name in its directory, nothing that leads
// elsewhere.
func validBase(base string) bool {
	return strings.HasSuffix(base, ".jsonl") && !strings.ContainsAny(base, "/\\") && backend.ValidPath(base) == nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Query selects sessions for Store.Query.
type Query struct {
	Cwd     string    // one working directory; "" for every one
	Since   time.Time // updated at or after this time
	Match   string    // case-insensitive text in the title or first message
	Limit   int       // at most this many, newest first; 0 for all
	Refresh bool      // check every file against the index (files changed in place by other programs)
}

// Query yields the sessions q selects, most recently updated first (ties
// by id), from the listing index.
func (s *Store) Query(ctx context.Context, q Query) iter.Seq2[Metadata, error] {
	return func(yield func(Metadata, error) bool) {
		list, err := s.Select(ctx, q)
		if err != nil {
			yield(Metadata{}, err)
			return
		}
		for _, m := range list {
			if !yield(m, nil) {
				return
			}
		}
	}
}

// Select returns what Query yields, as one slice: listing ten thousand
// sessions then copies each record once.
func (s *Store) Select(ctx context.Context, q Query) ([]Metadata, error) {
	all, err := s.collect(ctx, q.Cwd, q.Refresh)
	if err != nil {
		return nil, err
	}
	match := strings.ToLower(q.Match)
	keep := all[:0]
	for _, r := range all {
		m := &r.meta
		if q.Cwd != "" && m.Cwd != q.Cwd {
			continue // another cwd that encodes the same
		}
		if !q.Since.IsZero() && m.UpdatedAt.Before(q.Since) {
			continue
		}
		if match != "" && !strings.Contains(strings.ToLower(m.Title), match) && !strings.Contains(strings.ToLower(m.FirstMessage), match) {
			continue
		}
		keep = append(keep, r)
	}
	// Sorted by a number first: comparing times costs more than the rest.
	type item struct {
		at int64
		r  *idxRec
	}
	order := make([]item, len(keep))
	for i, r := range keep {
		order[i] = item{unixNano(r.meta.UpdatedAt), r}
	}
	slices.SortFunc(order, func(a, b item) int {
		if c := cmp.Compare(b.at, a.at); c != 0 {
			return c
		}
		return newestFirst(&a.r.meta, &b.r.meta) // times nanoseconds do not hold, ties
	})
	if q.Limit > 0 && len(order) > q.Limit {
		order = order[:q.Limit]
	}
	for i, o := range order {
		keep[i] = o.r
	}
	return metadataOf(keep[:len(order)]), nil
}

// newestFirst orders sessions most recently updated first, ties by id
// (descending): the order of every listing.
func newestFirst(a, b *Metadata) int {
	if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// metadataOf copies records out with their paths, which share one
// allocation.
func metadataOf(recs []*idxRec) []Metadata {
	n := 0
	for _, r := range recs {
		n += len(r.dir) + 1 + len(r.base)
	}
	paths := make([]byte, 0, n)
	out := make([]Metadata, len(recs))
	for i, r := range recs {
		start := len(paths)
		paths = append(append(append(paths, r.dir...), '/'), r.base...)
		out[i] = r.meta
		out[i].Path = unsafe.String(&paths[start], len(paths)-start)
		out[i].ProjectHash = backend.Base(r.dir)
	}
	return out
}

// collect reads the index of cwd's directory, or of every directory.
func (s *Store) collect(ctx context.Context, cwd string, refresh bool) ([]*idxRec, error) {
	if cwd != "" {
		dir := CwdDir(cwd)
		if !s.st.Capabilities().Directories {
			// No directory times to compare (a bucket): the listing of
			// the directory says whether it is there.
			return s.listDir(ctx, dir, backend.Info{Name: dir, IsDir: true}, refresh)
		}
		fi, err := s.st.Stat(ctx, dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return s.listDir(ctx, dir, fi, refresh)
	}
	dirs, err := s.cwdDirs(ctx)
	if err != nil {
		return nil, err
	}
	parts := make([][]*idxRec, len(dirs))
	errs := make([]error, len(dirs))
	parallel(len(dirs), 4, func(i int) {
		parts[i], errs[i] = s.listDir(ctx, dirs[i].Name, dirs[i], refresh)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// cwdDirs lists the cwd directories of the store (none when it has no
// sessions directory).
func (s *Store) cwdDirs(ctx context.Context) ([]backend.Info, error) {
	var dirs []backend.Info
	for fi, err := range s.st.List(ctx, SessionsDir) {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if fi.IsDir && strings.HasPrefix(fi.Base(), "--") {
			dirs = append(dirs, fi)
		}
	}
	return dirs, nil
}

// parallel runs f(0..n-1), at most limit at once.
func parallel(n, limit int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

// markOpen creates the open marker of the session file name: listings look
// at its file until Close removes the marker.
func (s *Store) markOpen(ctx context.Context, name string, fresh bool) error {
	body := fmt.Appendf(nil, `{"pid":%d,"host":%s,"since":%q}`+"\n", os.Getpid(), jsonw.AppendString(nil, s.hostName()), s.cfg.now().UTC().Format(time.RFC3339Nano))
	return s.putSidecar(ctx, SidecarDir(name)+OpenSuffix, body, fresh)
}

// unmarkOpen removes the marker once the session's metadata is written.
func (s *Store) unmarkOpen(ctx context.Context, name string) error {
	err := backend.RemoveFile(ctx, s.st, SidecarDir(name)+OpenSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
