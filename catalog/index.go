package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"

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
	restart bool // the tail did not match: everything was read again
	err     error
}

// indexed is a doc with its place in the file and its token stream.
type indexed struct {
	doc
	off, n int64
	stream []byte
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
	files, err := c.listFiles(ctx)
	if err != nil {
		return err
	}
	states, err := loadStates(ctx, db)
	if err != nil {
		return err
	}
	var todo []work
	for path, fi := range files {
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
		if _, ok := files[path]; !ok {
			todo = append(todo, work{kind: workDelete, path: path, base: s, have: true})
		}
	}
	if len(todo) == 0 {
		return nil
	}
	return c.apply(ctx, db, todo)
}

// listFiles lists the session files of the store: sessions/--*/*.jsonl.
func (c *Catalog) listFiles(ctx context.Context) (map[string]backend.Info, error) {
	files := map[string]backend.Info{}
	var dirs []string
	for fi, err := range c.st.List(ctx, session.SessionsDir) {
		if errors.Is(err, fs.ErrNotExist) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if fi.IsDir && strings.HasPrefix(fi.Base(), "--") {
			dirs = append(dirs, fi.Name)
		}
	}
	for _, dir := range dirs {
		for fi, err := range c.st.List(ctx, dir) {
			if errors.Is(err, fs.ErrNotExist) {
				break // removed meanwhile
			}
			if err != nil {
				return nil, err
			}
			if !fi.IsDir && strings.HasSuffix(fi.Name, ".jsonl") {
				files[fi.Name] = fi
			}
		}
	}
	return files, nil
}

func unixNano(fi backend.Info) int64 {
	if fi.ModTime.IsZero() {
		return 0
	}
	return fi.ModTime.UnixNano()
}

func loadStates(ctx context.Context, db *sql.DB) (map[string]fileState, error) {
	rows, err := db.QueryContext(ctx, "SELECT id, path, size, mtime, tail, skip FROM files")
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	out := map[string]fileState{}
	for rows.Next() {
		var s fileState
		var path string
		if err := rows.Scan(&s.id, &path, &s.size, &s.mtime, &s.tail, &s.skip); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		out[path] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return out, nil
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

	var batch []*parsed
	bytesIn := 0
	for p := range out {
		if p.err != nil {
			return p.err
		}
		batch = append(batch, p)
		for _, d := range p.docs {
			bytesIn += len(d.stream)
		}
		if len(batch) >= c.cfg.batchLen || bytesIn >= 32<<20 {
			if err := c.write(ctx, db, batch); err != nil {
				return err
			}
			batch, bytesIn = batch[:0], 0
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.write(ctx, db, batch)
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
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		n := int64(len(line)) + 1
		switch {
		case p.skip:
		case off == 0:
			h, ok := parseHeader(line)
			if !ok {
				p.skip = true // not a session file (spec 003: read as empty)
				break
			}
			p.hdr, p.hdrLen = h, len(line)
			if h.title != "" {
				p.docs = append(p.docs, indexed{doc: doc{role: RoleTitle, ts: h.ts, texts: []string{h.title}}, off: 0, n: int64(len(line))})
			}
		default:
			if d, ok := parseEntry(line, buf[:0]); ok {
				p.docs = append(p.docs, indexed{doc: d, off: off, n: int64(len(line))})
			}
		}
		off += n
		data = rest
	}
	for i := range p.docs {
		d := &p.docs[i]
		c.resolve(ctx, &d.doc)
		for _, t := range d.texts {
			d.stream = appendStream(d.stream, t)
		}
		d.texts = nil
	}
}

// resolve puts the text of the blobs a doc refers to in their places.
func (c *Catalog) resolve(ctx context.Context, d *doc) {
	if len(d.refs) == 0 {
		return
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
		if err != nil {
			c.cfg.log.Debug("trove/catalog: blob not indexed", "ref", ref, "err", err)
			continue
		}
		if len(data) > c.cfg.maxBlob {
			data = data[:c.cfg.maxBlob]
		}
		d.texts[i] = string(data)
	}
}
