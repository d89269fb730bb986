package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/internal/jsonscan"
	"github.com/trovekit/trove/session"
)

// tailLen is how many bytes before the read offset the catalog keeps of
// each file: a file whose bytes there changed was rewritten, not appended
// to, and is read again whole.
const tailLen = 64

// fileState is a file as the catalog last read it.
type fileState struct {
	id          int64
	size, mtime int64
	tail        []byte
	skip        bool
}

type workKind uint8

const (
	workNew     workKind = iota // not in the catalog
	workGrow                    // read from the offset on
	workReindex                 // read again whole
	workDelete                  // gone from the store
	workTouch                   // same bytes, new time
)

type work struct {
	kind workKind
	path string
	fi   backend.Info
	base fileState // the state planned from: the writer checks it is still so
	have bool      // base is in the catalog
}

// parsed is a work item read and parsed, ready to be written.
type parsed struct {
	work
	hdr     header
	hdrLen  int
	docs    []indexed
	size    int64 // the new read offset
	tail    []byte
	skip    bool
	restart bool     // the tail did not match: everything was read again
	run     string   // a run log's run id (from its header)
	done    bool     // a run log's run.end was read
	refs    []string // blob refs in the lines read, once per line
	err     error
}

// indexed is a doc with its place in the file, its token stream and
// its pair filter (pairFilter).
type indexed struct {
	doc
	off, n int64
	stream []byte
	pairs  []byte
}

// Refresh brings the catalog up to the store: new session files are
// indexed, grown ones read from where the catalog stopped (only the new
// bytes), rewritten ones read again, and deleted ones dropped. With all,
// a file whose time changed but not its size is read again whole (a file
// changed in place); without, only its last bytes are compared.
func (c *Catalog) Refresh(ctx context.Context, all bool) error {
	err := c.refresh(ctx, all)
	if err != nil && c.recover(ctx, err) {
		return nil
	}
	return err
}

func (c *Catalog) refresh(ctx context.Context, all bool) error {
	db, err := c.handle()
	if err != nil {
		return err
	}
	saved, err := loadDirs(ctx, db)
	if err != nil {
		return err
	}
	l, err := c.listFiles(ctx, saved, all)
	if err != nil {
		return err
	}
	// The catalog's state of the files this refresh looked at: those of
	// the directories listed (and of those gone) and the open ones.
	var dirs, paths []string
	for name := range l.dirs {
		if !l.shortcut[name] {
			dirs = append(dirs, name)
		}
	}
	for name := range saved {
		if _, ok := l.dirs[name]; !ok {
			dirs = append(dirs, name)
		}
	}
	for path := range l.files {
		if l.shortcut[backend.Dir(path)] {
			paths = append(paths, path)
		}
	}
	if len(saved) == 0 {
		dirs = nil // a first listing: every file
	}
	states, err := loadStates(ctx, db, len(saved) == 0, dirs, paths)
	if err != nil {
		return err
	}
	var todo []work
	for path, fi := range l.files {
		s, ok := states[path]
		w := work{path: path, fi: fi, base: s, have: ok}
		mod := unixNano(fi)
		switch {
		case !ok:
			w.kind = workNew
		case fi.Size == s.size && mod == s.mtime:
			continue
		case fi.Size > s.size:
			w.kind = workGrow
		case fi.Size < s.size || all:
			w.kind = workReindex
		default:
			w.kind = workTouch // the tail says whether it was rewritten
		}
		todo = append(todo, w)
	}
	for path, s := range states {
		if _, ok := l.files[path]; !ok && !l.shortcut[backend.Dir(path)] {
			todo = append(todo, work{kind: workDelete, path: path, base: s, have: true})
		}
	}
	if len(todo) > 0 {
		if err := c.applyAll(ctx, db, todo); err != nil {
			return err
		}
	}
	if err := runsOpen(ctx, db, l); err != nil {
		return err
	}
	if l.dirsChanged(saved) {
		return saveDirs(ctx, db, l.dirs)
	}
	return nil
}

// dirState is a cwd directory as the catalog last listed it: its time
// (0: not to be trusted) and the session files that had an open marker.
type dirState struct {
	mod  int64
	open []string
}

// listing is what a refresh found of the session files.
type listing struct {
	files    map[string]backend.Info
	shortcut map[string]bool // directories not listed: unchanged since saved
	dirs     map[string]dirState
}

func (l *listing) dirsChanged(saved map[string]dirState) bool {
	if len(saved) != len(l.dirs) {
		return true
	}
	for name, d := range l.dirs {
		s, ok := saved[name]
		if !ok || s.mod != d.mod || !slices.Equal(s.open, d.open) {
			return true
		}
	}
	return false
}

// listFiles lists the session files of the store, sessions/--*/*.jsonl,
// and its run logs (listRuns). Where directory times are trusted, a directory unchanged since the
// catalog listed it is not listed again: only its files with an open
// marker (a trove writer at work, or killed) can have changed, and only
// they are looked at. With all, every directory is listed.
func (c *Catalog) listFiles(ctx context.Context, saved map[string]dirState, all bool) (*listing, error) {
	l := &listing{files: map[string]backend.Info{}, shortcut: map[string]bool{}, dirs: map[string]dirState{}}
	caps := c.st.Capabilities()
	dirTimes := caps.Directories && caps.CrossProcess
	var dirs []backend.Info
	for fi, err := range c.st.List(ctx, session.SessionsDir) {
		if errors.Is(err, fs.ErrNotExist) {
			break // no sessions yet
		}
		if err != nil {
			return nil, err
		}
		if fi.IsDir && strings.HasPrefix(fi.Base(), "--") {
			dirs = append(dirs, fi)
		}
	}
	now := c.cfg.now()
	for _, dir := range dirs {
		if err := c.listDir(ctx, l, dir, saved, all, dirTimes, now); err != nil {
			return nil, err
		}
	}
	if err := c.listRuns(ctx, l, saved, all, dirTimes, now); err != nil {
		return nil, err
	}
	return l, nil
}

// listDir adds the files of one directory to l: listed, or where its time
// is trusted and has not moved since saved, only its open files stated.
func (c *Catalog) listDir(ctx context.Context, l *listing, dir backend.Info, saved map[string]dirState, all, dirTimes bool, now time.Time) error {
	mod := unixNano(dir)
	if s, ok := saved[dir.Name]; ok && dirTimes && !all && s.mod != 0 && s.mod == mod {
		l.shortcut[dir.Name] = true
		l.dirs[dir.Name] = s
		for _, path := range s.open {
			fi, err := c.st.Stat(ctx, path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			l.files[path] = fi
		}
		return nil
	}
	var open []string
	for fi, err := range c.st.List(ctx, dir.Name) {
		if errors.Is(err, fs.ErrNotExist) {
			break // removed meanwhile
		}
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir:
		case strings.HasSuffix(fi.Name, ".jsonl"):
			l.files[fi.Name] = fi
		case strings.HasSuffix(fi.Name, session.OpenSuffix):
			open = append(open, strings.TrimSuffix(fi.Name, session.OpenSuffix)+".jsonl")
		}
	}
	// A time too recent to be trusted yet (a change within the file
	// system's granularity would not move it) is not kept.
	if !dirTimes || mod == 0 || now.Sub(dir.ModTime) <= racyWindow(dir.ModTime) {
		mod = 0
	}
	slices.Sort(open)
	l.dirs[dir.Name] = dirState{mod: mod, open: open}
	return nil
}

// racyWindow is how long after a directory's time a change may leave that
// time as it was: the file system's granularity. Times with a fraction of
// a second come from a fine clock; whole seconds may be a coarse one.
func racyWindow(t time.Time) time.Duration {
	if t.Nanosecond() != 0 {
		return 100 * time.Millisecond
	}
	return 3 * time.Second
}

func loadDirs(ctx context.Context, db *sql.DB) (map[string]dirState, error) {
	rows, err := db.QueryContext(reading(ctx), "SELECT name, mtime, open FROM dirs")
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	out := map[string]dirState{}
	for rows.Next() {
		var name, open string
		var d dirState
		if err := rows.Scan(&name, &d.mod, &open); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		if open != "" {
			d.open = strings.Split(open, "\n")
		}
		out[name] = d
	}
	return out, rows.Err()
}

// saveDirs records the directories as listed, after their files were
// written: a saved time vouches for every file of its directory.
func saveDirs(ctx context.Context, db *sql.DB, dirs map[string]dirState) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM dirs"); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	for name, d := range dirs {
		if _, err := tx.ExecContext(ctx, "INSERT INTO dirs(name, mtime, open) VALUES(?, ?, ?)", name, d.mod, strings.Join(d.open, "\n")); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

func unixNano(fi backend.Info) int64 {
	if fi.ModTime.IsZero() {
		return 0
	}
	return fi.ModTime.UnixNano()
}

// loadStates reads the catalog's state of the files in dirs and of paths,
// or of every file.
func loadStates(ctx context.Context, db *sql.DB, every bool, dirs, paths []string) (map[string]fileState, error) {
	out := map[string]fileState{}
	const cols = "SELECT id, path, size, mtime, tail, skip FROM files"
	read := func(query string, args ...any) error {
		rows, err := db.QueryContext(reading(ctx), query, args...)
		return eachRow(rows, err, func(rows *sql.Rows) error {
			var s fileState
			var path string
			if err := rows.Scan(&s.id, &path, &s.size, &s.mtime, &s.tail, &s.skip); err != nil {
				return err
			}
			out[path] = s
			return nil
		})
	}
	if every {
		return out, read(cols)
	}
	for _, dir := range dirs {
		// The files of dir: paths between "dir/" and "dir0" ('0' follows '/').
		if err := read(cols+" WHERE path > ? AND path < ?", dir+"/", dir+"0"); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		if err := read(cols+" WHERE path = ?", p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bigApply is how many bytes a refresh reads, at least, to write them
// through a handle of its own that does not map the file (a build, a
// rebuild, a large import): see dsn.
const bigApply = 64 << 20

// applyAll is apply, through a handle without the mapping when todo
// reads bigApply bytes or more.
func (c *Catalog) applyAll(ctx context.Context, db *sql.DB, todo []work) error {
	var n int64
	for _, w := range todo {
		switch w.kind {
		case workDelete:
		case workGrow:
			n += w.fi.Size - w.base.size
		default:
			n += w.fi.Size
		}
	}
	if n < bigApply {
		return c.apply(ctx, db, todo)
	}
	big, err := c.sqlOpen(false)
	if err != nil {
		return err
	}
	defer big.Close()
	return c.apply(ctx, big, todo)
}

// apply reads and parses the work on a few goroutines and writes it in
// transactions of a bounded number of files and bytes: a writer killed
// at any point leaves every file's rows and offset as one transaction
// left them.
func (c *Catalog) apply(ctx context.Context, db *sql.DB, todo []work) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan work)
	out := make(chan *parsed, 8)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range in {
				p := c.read(ctx, w)
				select {
				case out <- p:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(in)
		for _, w := range todo {
			select {
			case in <- w:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()

	tell := func(int) {}
	if f := c.cfg.progress; f != nil {
		tell = func(done int) { f(done, len(todo)) }
	}
	tell(0)
	var before float64 // tokens in the index before
	if err := db.QueryRowContext(ctx, "SELECT ntok FROM totals").Scan(&before); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	var batch []*parsed
	bytesIn, tokens, done := 0, 0, 0
	for p := range out {
		if p.err != nil {
			return p.err
		}
		batch = append(batch, p)
		for _, d := range p.docs {
			bytesIn += len(d.stream)
			tokens += bytes.Count(d.stream, []byte(" "))
		}
		if len(batch) >= c.cfg.batchLen || bytesIn >= 32<<20 {
			if err := c.write(ctx, db, batch); err != nil {
				return err
			}
			done += len(batch)
			tell(done)
			batch, bytesIn = batch[:0], 0
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.write(ctx, db, batch); err != nil {
		return err
	}
	if tokens >= c.cfg.optimizeAbove && float64(tokens) >= before {
		if err := c.optimize(ctx, db); err != nil {
			return err
		}
	}
	tell(len(todo)) // after the merge, which can take as long as the writes
	return nil
}

// optimize merges the index into one segment, in a transaction of its
// own. Each write transaction adds a segment to FTS5's index, which
// merges them only a few at a time; a query opens every segment, a page
// read or more each. A refresh that writes at least optimizeAbove tokens,
// and as many as the index held before (a build, a large import),
// merges it: doubling each time, merging costs about as much again as
// writing. It then vacuums the file.
func (c *Catalog) optimize(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "INSERT INTO fts(fts) VALUES('optimize')"); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	c.gen.Add(1)
	return c.vacuum(ctx)
}

// vacuum rewrites the database file, each table's pages in the order of
// its keys. A build leaves them interleaved (files are written a batch
// at a time, entries in rank-key order, not in the order they come) and
// the merge leaves the old segments' pages free: 12% of the file after a
// build of 10,000 sessions. A query in a new process faults in each page
// it reads through the mapping, and, in key order, the kernel maps a
// page's neighbours with it: a phrase query of two common words took
// 1,670 page faults before, 1,240 after. It reads every page: not
// through the mapping (dsn). Readers in other processes carry on (WAL);
// a kill leaves the file as it was.
func (c *Catalog) vacuum(ctx context.Context) error {
	db, err := c.sqlOpen(false)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer conn.Close()
	// The WAL then holds every page: fold them back and empty it, so the
	// catalog does not keep a second copy of itself. Emptying it waits
	// for readers of other processes to leave the WAL, a second at most:
	// else the last connection to close empties it.
	for _, s := range []string{"VACUUM", "PRAGMA busy_timeout = 1000", "PRAGMA wal_checkpoint(TRUNCATE)"} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("catalog: %s: %w", s, err)
		}
	}
	c.gen.Add(1)
	return nil
}

// read reads what a work item needs of its file and parses it.
func (c *Catalog) read(ctx context.Context, w work) *parsed {
	p := &parsed{work: w}
	if w.kind == workDelete {
		return p
	}
	start := int64(0)
	if w.kind == workGrow || w.kind == workTouch {
		start = w.base.size - int64(len(w.base.tail))
	}
	data, err := c.readFrom(ctx, w.path, start)
	if errors.Is(err, fs.ErrNotExist) {
		p.kind = workDelete
		return p
	}
	if err != nil {
		p.err = err
		return p
	}
	if start > 0 || w.kind == workTouch {
		if !bytes.HasPrefix(data, w.base.tail) {
			// Rewritten, not appended to: read it all again.
			p.kind, p.restart, start = workReindex, true, 0
			if data, err = c.readFrom(ctx, w.path, 0); err != nil {
				p.err = err
				return p
			}
		} else {
			data = data[len(w.base.tail):]
			start = w.base.size
		}
	}
	var prev []byte
	if start > 0 {
		prev = w.base.tail
	}
	c.parse(ctx, p, data, start, prev)
	return p
}

func (c *Catalog) readFrom(ctx context.Context, path string, off int64) ([]byte, error) {
	rc, err := c.st.OpenRange(ctx, path, off, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// parse reads the complete lines of data, which starts at offset start
// of the file after the bytes prev: the header (from offset 0) and the
// entries. A last line without its newline is left for the next refresh.
func (c *Catalog) parse(ctx context.Context, p *parsed, data []byte, start int64, prev []byte) {
	end := bytes.LastIndexByte(data, '\n') + 1
	p.size = start + int64(end)
	p.skip = p.base.skip && p.kind == workGrow
	data = data[:end]
	if len(data) >= tailLen {
		p.tail = bytes.Clone(data[len(data)-tailLen:])
	} else if tail := append(bytes.Clone(prev), data...); len(tail) > tailLen {
		p.tail = tail[len(tail)-tailLen:]
	} else {
		p.tail = tail
	}
	off := start
	var buf [16]jsonscan.Member
	isRun := isRunPath(p.path)
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		n := int64(len(line)) + 1
		switch {
		case p.skip:
		case isRun && off == 0:
			h, run, ok := parseRunHeader(line)
			if !ok {
				p.skip = true
				break
			}
			p.hdr, p.hdrLen, p.run = h, len(line), run
		case isRun:
			d, ok, end := parseRunRecord(line, off)
			if ok {
				p.docs = append(p.docs, indexed{doc: d, off: off, n: int64(len(line))})
			}
			p.done = p.done || end
		case off == 0:
			h, ok := parseHeader(line)
			if !ok {
				p.skip = true // not a session file (pi session v3: read as empty)
				break
			}
			p.hdr, p.hdrLen = h, len(line)
			if h.title != "" {
				p.docs = append(p.docs, indexed{doc: doc{role: RoleTitle, ts: h.ts, texts: []string{h.title}}, off: 0, n: int64(len(line))})
			}
		default:
			p.refs = appendRefs(p.refs, line)
			if d, ok := parseEntry(line, buf[:0]); ok {
				p.docs = append(p.docs, indexed{doc: d, off: off, n: int64(len(line))})
			}
		}
		off += n
		data = rest
	}
	var hashes []uint64
	for i := range p.docs {
		d := &p.docs[i]
		if err := c.resolve(ctx, &d.doc); err != nil {
			p.err = err
			return
		}
		for _, t := range d.texts {
			d.stream = appendStream(d.stream, t)
		}
		d.pairs, hashes = pairFilter(d.stream, hashes)
		d.texts = nil
	}
}

// appendRefs appends the blob refs a line holds (images, tool outputs),
// each once.
func appendRefs(refs []string, line []byte) []string {
	start := len(refs)
	for {
		i := bytes.Index(line, []byte(`"blob:`))
		if i < 0 {
			return refs
		}
		line = line[i+1:]
		end := bytes.IndexByte(line, '"')
		if end < 0 {
			return refs
		}
		if _, err := cas.ParseRef(string(line[:end])); err == nil && !slices.Contains(refs[start:], string(line[:end])) {
			refs = append(refs, string(line[:end]))
		}
		line = line[end:]
	}
}

// resolve puts the text of the blobs a doc refers to in their places.
//
// A blob that cannot be read leaves its place empty, but for one whose
// digest algorithm this build cannot hash (cas.ErrAlgorithmUnavailable):
// indexed without its text, the entry would stay unfound after a build
// that has it reads the catalog as current, so the error is returned.
func (c *Catalog) resolve(ctx context.Context, d *doc) error {
	if len(d.refs) == 0 {
		return nil
	}
	r := 0
	for i, t := range d.texts {
		if t != "" || r >= len(d.refs) {
			continue
		}
		ref := d.refs[r]
		r++
		if c.blobs == nil {
			continue
		}
		parsedRef, err := cas.ParseRef(ref)
		if err != nil {
			continue
		}
		data, err := c.blobs.Get(ctx, parsedRef)
		if errors.Is(err, cas.ErrAlgorithmUnavailable) {
			return fmt.Errorf("catalog: %w", err)
		}
		if err != nil {
			c.cfg.log.Debug("trove/catalog: blob not indexed", "ref", ref, "err", err)
			continue
		}
		if len(data) > c.cfg.maxBlob {
			data = data[:c.cfg.maxBlob]
		}
		d.texts[i] = string(data)
	}
	return nil
}
