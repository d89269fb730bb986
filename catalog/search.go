package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/internal/jsonscan"
)

// Query is a search.
type Query struct {
	Text    string    // the query (docs/catalog.md, "Query syntax")
	Cwd     string    // sessions of this working directory only; "" for all
	Since   time.Time // entries at or after this time
	Model   string    // sessions that used this model
	Role    string    // "user", "assistant" or "tool" (a tool result); "" for any
	Tool    string    // entries calling this tool, or its results
	Limit   int       // at most this many hits; 0 for 20
	Refresh bool      // read again files changed in place (Refresh all)
	// NoScores leaves each hit's Score 0, for a caller that shows none:
	// the hits and their order are the same, and the entries each term
	// matches (ranking's document counts) are not counted, 0.2 ms a word
	// in a new process.
	NoScores bool
}

// Hit is one matching entry, best first.
type Hit struct {
	SessionID string // for a run's record, the session of the run ("" if none)
	RunID     string // set for a record of a run log
	EntryID   string // "" for a session's title; "@offset" for a run's record
	Branch    string // the leaf the entry's newest continuation ends at
	Path      string // the session file
	Cwd       string
	Title     string
	Role      string
	Tools     []string
	Time      time.Time
	Snippet   string  // the matching text, matches between « and »
	Score     float64 // higher is better: BM25, each term counted once
}

// Snippet marks.
const (
	MarkOpen  = "«"
	MarkClose = "»"
)

// DefaultLimit is the number of hits a query without a limit returns.
const DefaultLimit = 20

// Search yields the entries that match q, best first, after bringing the
// catalog up to the store. A query that does not parse yields one error
// wrapping ErrBadQuery.
func (c *Catalog) Search(ctx context.Context, q Query) iter.Seq2[Hit, error] {
	return func(yield func(Hit, error) bool) {
		e, err := parseQuery(q.Text)
		if err == nil {
			err = checkRole(q.Role)
		}
		if err == nil {
			err = c.Refresh(ctx, q.Refresh)
		}
		if err != nil {
			yield(Hit{}, err)
			return
		}
		hits, err := c.query(ctx, e, q)
		if err != nil && c.recover(ctx, err) {
			hits, err = c.query(ctx, e, q)
		}
		if err != nil {
			yield(Hit{}, err)
			return
		}
		for _, h := range hits {
			if !yield(h, nil) {
				return
			}
		}
	}
}

func checkRole(role string) error {
	switch role {
	case "", RoleUser, RoleAssistant, RoleTool:
		return nil
	}
	return fmt.Errorf("%w: role %q: want user, assistant or tool", ErrBadQuery, role)
}

// maxVerified bounds the candidates a query that FTS5 cannot answer
// exactly (a phrase: the index keeps no positions) reads back.
const maxVerified = 20000

func (c *Catalog) query(ctx context.Context, e *expr, q Query) ([]Hit, error) {
	db, err := c.handle()
	if err != nil {
		return nil, err
	}
	c.adviseMapping()
	var mb strings.Builder
	exact := e.fts(&mb)
	r := &results{limit: q.Limit, exact: exact, e: e, terms: e.positive(nil)}
	if r.limit <= 0 {
		r.limit = DefaultLimit
	}
	var counted []string
	if !q.NoScores {
		counted, r.termDocs = countedExprs(r.terms)
	}
	r.ncounted = len(counted)
	r.fetch, r.args = fetchQuery(q, counted, phrasePairs(e, nil), c.cfg.maxCount)
	if err := c.collect(ctx, db, r, mb.String()); err != nil {
		return nil, err
	}
	if err := c.setBranches(ctx, db, r); err != nil {
		return nil, err
	}
	return r.hits, nil
}

// collect adds the hits of the FTS5 expression match, best first, until
// the limit. Rank keys go in ranking order (rankKey), so candidates come
// best first too, and each is read back from its file (its snippet, and
// for a phrase the check of its word order) as its row is stepped to:
// SQLite joins a candidate's rows only when asked for the next, so a
// query stops at its last hit having read no row past it. A batch asks
// for the limit when every candidate is a hit, else for maxBatch; a
// query whose candidates are checked asks for them all (maxVerified) in
// one: its statement passes over those whose pair filter rules them
// out, so the rows it returns do not say how far it went.
func (c *Catalog) collect(ctx context.Context, db *sql.DB, r *results, match string) error {
	batch := r.limit
	switch {
	case !r.exact:
		batch = maxVerified
	case len(r.args) > len(r.terms):
		batch = maxBatch
	}
	after := int64(-1)
	for first := true; ; first = false {
		if !r.exact {
			batch = min(batch, maxVerified-r.verified)
		}
		n, last, err := c.fetchBatch(ctx, db, r, match, after, batch, first)
		if err != nil || n < batch || r.done() {
			return err
		}
		after, batch = last, maxBatch
	}
}

// maxBatch is the most candidates a batch asks for.
const maxBatch = 1024

// fetchQuery is the statement that reads a batch of candidates: the
// rank keys FTS5 matches (?1) above ?2, at most limit of them (written
// between the two halves of the statement: FTS5 looks at its LIMIT when
// planning, so a LIMIT bound as an argument expired the statement at
// its first run, a second parse), but those whose pair filter lacks a
// pair of needed (phrasePairs), with their rows, whether they pass q's
// filters, and, for the first batch (?3: 1), the entries each of the
// FTS5 expressions counted matches, at most maxCount (ranking's document
// counts, countedExprs), and the sizes ranking needs. One statement, not
// one each: in a new process each costs more than what it reads. Its
// arguments from ?4 on are args, then counted, then pairCond's.
func fetchQuery(q Query, counted []string, needed [][]uint64, maxCount int) (stmt [2]string, args []any) {
	var where []string
	if q.Cwd != "" {
		where, args = append(where, "f.cwd = ?"), append(args, q.Cwd)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "e.ts >= ?"), append(args, q.Since.UnixMilli())
	}
	if q.Role != "" {
		where, args = append(where, "e.role = ?"), append(args, q.Role)
	}
	if q.Tool != "" {
		where, args = append(where, "instr(' ' || e.tools || ' ', ?) > 0"), append(args, " "+q.Tool+" ")
	}
	if q.Model != "" {
		where, args = append(where, "f.id IN (SELECT file FROM entries WHERE model = ? AND model != '')"), append(args, q.Model)
	}
	pass := "1"
	if len(where) > 0 {
		for i := range where {
			where[i] = strings.Replace(where[i], "?", "?"+strconv.Itoa(4+i), 1)
		}
		pass = "coalesce(" + strings.Join(where, " AND ") + ", 0)"
	}
	var counts strings.Builder
	for _, x := range counted {
		args = append(args, x)
		fmt.Fprintf(&counts, "CASE WHEN ?3 THEN (SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH ?%d LIMIT %d)) END, ", 3+len(args), maxCount)
	}
	pairs, pairArgs := pairCond(needed, 4+len(args))
	stmt[0] = `SELECT c.rowid, e.file, e.eid, e.ts, e.role, e.tools, e.off, e.len, f.path, f.session, f.cwd, f.title, e.ntok, f.run,
		f.last, f.forked, ` + pass + `, ` + counts.String() + `(SELECT nent FROM totals), (SELECT ntok FROM totals)
		FROM (SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid > ?2 ORDER BY rowid LIMIT `
	stmt[1] = `) c JOIN entries e ON e.id = c.rowid JOIN files f ON f.id = e.file WHERE ` + pairs + ` ORDER BY c.rowid`
	return stmt, append(args, pairArgs...)
}

// fetchBatch reads the candidates above rank key after, at most limit,
// and considers each that passes the filters, until r is done. It
// returns how many it stepped to and the last one's rank key.
func (c *Catalog) fetchBatch(ctx context.Context, db *sql.DB, r *results, match string, after int64, limit int, first bool) (n int, last int64, err error) {
	rows, err := c.rows(ctx, db, r.fetch[0]+strconv.Itoa(limit)+r.fetch[1], append([]any{match, after, first}, r.args...)...)
	if err != nil {
		return 0, 0, fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	// One row's destinations for the batch, not a set a row: in a new
	// process every allocation is fresh memory, a page fault each few KiB.
	var (
		cr         candRow
		ts         int64
		tools      string
		pass       bool
		nent, ntok sql.NullFloat64
	)
	counts := make([]sql.NullFloat64, r.ncounted)
	h := &cr.h
	dest := make([]any, 0, 19+len(counts))
	dest = append(dest, &cr.id, &cr.file, &h.EntryID, &ts, &h.Role, &tools, &cr.off, &cr.len, &h.Path, &h.SessionID, &h.Cwd, &h.Title,
		&cr.ntok, &h.RunID, &cr.chain.last, &cr.chain.forked, &pass)
	for i := range counts {
		dest = append(dest, &counts[i])
	}
	dest = append(dest, &nent, &ntok)
	for !r.done() && rows.Next() {
		if err := ctx.Err(); err != nil {
			return n, last, err
		}
		h.Time, h.Tools = time.Time{}, nil
		if err := rows.Scan(dest...); err != nil {
			return n, last, fmt.Errorf("catalog: %w", err)
		}
		if cr.id <= last && n > 0 {
			return n, last, fmt.Errorf("catalog: candidates out of order: %w", errDamaged)
		}
		if first && n == 0 {
			docs := make([]float64, len(counts))
			for i, d := range counts {
				docs[i] = d.Float64
			}
			r.rk = newRanker(r.termDocs, docs, nent.Float64, ntok.Float64)
		}
		n, last = n+1, cr.id
		if !pass {
			continue
		}
		if ts != 0 {
			h.Time = time.UnixMilli(ts).UTC()
		}
		h.Tools = strings.Fields(tools)
		if err := c.consider(ctx, r, &cr); err != nil {
			return n, last, err
		}
	}
	if err := rows.Err(); err != nil {
		return n, last, fmt.Errorf("catalog: %w", err)
	}
	return n, last, nil
}

// jsonIDs is ids as a JSON array, for json_each.
func jsonIDs(ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// results gathers a query's hits across its batches.
type results struct {
	limit    int
	exact    bool // FTS5's answer is the answer: no candidate is read back to check
	e        *expr
	terms    []*expr
	termDocs [][]int // the document counts of terms[i]: countedExprs
	ncounted int
	rk       *ranker
	fetch    [2]string // fetchQuery's, either side of the limit
	args     []any
	hits     []Hit
	files    []int64 // hits[i]'s file row
	chains   []chain // hits[i]'s file's entries
	verified int     // candidates read back and checked
	scratch  scratch // reused by each candidate's check
}

// scratch is memory a query's candidates reuse: in a new process every
// allocation is fresh memory, a page fault each few KiB, and a phrase
// checks several candidates per hit.
type scratch struct {
	line  []byte   // the entry's line
	toks  []byte   // its tokens, each after a space
	at    []int    // where each token starts in toks, and its end after
	all   []string // its tokens
	spans []span   // spans[i]: the place in its text of all[i]'s word
	ends  []int    // ends[i]: how many of all the texts up to i hold
	hit   []bool   // a snippet's tokens that a term matches
	marks []span   // a snippet's marked words
	// an entry's top-level members: each candidate's parse reuses them
	members jsonscan.Members
}

func (r *results) done() bool {
	return len(r.hits) >= r.limit || !r.exact && r.verified >= maxVerified
}

// candRow is a candidate's row: its hit as far as the rows tell.
type candRow struct {
	h                        Hit
	id, file, off, len, ntok int64
	chain                    chain
}

// consider reads a candidate's text back from its file (the snippet's,
// and the check of what the index cannot tell: word order) and adds it
// if it matches. A word query's candidates are checked too: a query's
// statements each see the catalog as it is then, so a writer committing
// in between (an id deleted and given to another entry) or a file
// changed in place since it was read must not yield a hit that does not
// match.
func (c *Catalog) consider(ctx context.Context, r *results, cr *candRow) error {
	h := cr.h
	texts, err := c.entryTexts(ctx, &r.scratch, h, cr.off, cr.len)
	if err != nil {
		return err
	}
	if !r.exact {
		r.verified++
	}
	if !r.e.match(r.scratch.tokens(texts)) {
		return nil
	}
	h.Snippet = makeSnippet(texts, &r.scratch, r.terms, 200)
	h.Score = r.rk.score(cr.ntok)
	r.hits = append(r.hits, h)
	r.files = append(r.files, cr.file)
	r.chains = append(r.chains, cr.chain)
	return nil
}

// ranker scores hits by BM25 with every term counted once: the sum of
// the terms' IDF (a phrase's: its words'), scaled by the entry's length
// against the average.
type ranker struct {
	idf, avg float64
	n        float64 // entries
}

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// newRanker makes the ranker of a query whose terms' IDFs are those of
// the document counts docs[termDocs[i]...] (countedExprs), over n
// entries of ntok tokens in all.
func newRanker(termDocs [][]int, docs []float64, n, ntok float64) *ranker {
	avg := 1.0
	if n > 0 && ntok > 0 {
		avg = ntok / n
	}
	r := &ranker{avg: avg, n: n}
	for _, ds := range termDocs {
		for _, d := range ds {
			r.idf += math.Log((n-docs[d]+0.5)/(docs[d]+0.5) + 1)
		}
	}
	return r
}

// countedExprs lists the FTS5 expressions whose document counts rank a
// query, each once, and for each of terms the indexes of its own in
// that list: a word's or a prefix's expression; a phrase's words' whole
// forms, one each, as Lucene ranks a phrase (its IDF is the sum of its
// words'). Not the count of the entries holding all a phrase's words:
// FTS5 finds those by seeking in the common word's list once for each
// entry holding the rare one, where a word's own count reads its list
// in order, and stops at the bound (maxCount).
func countedExprs(terms []*expr) (exprs []string, termDocs [][]int) {
	index := map[string]int{}
	add := func(x string) int {
		i, ok := index[x]
		if !ok {
			i = len(exprs)
			index[x], exprs = i, append(exprs, x)
		}
		return i
	}
	termDocs = make([][]int, len(terms))
	for i, t := range terms {
		if t.op != opPhrase {
			var b strings.Builder
			t.fts(&b)
			termDocs[i] = []int{add(b.String())}
			continue
		}
		for j, tok := range t.toks {
			if j < len(t.parts) && t.parts[j] {
				continue
			}
			x := `"` + tok + `"` // as fts writes it: tokens are letters and digits
			if j == len(t.toks)-1 && t.prefix {
				x += "*"
			}
			termDocs[i] = append(termDocs[i], add(x))
		}
	}
	return exprs, termDocs
}

// score is the BM25 of an entry of ntok tokens holding each term once.
func (r *ranker) score(ntok int64) float64 {
	return r.idf * (bm25K1 + 1) / (1 + bm25K1*(1-bm25B+bm25B*float64(ntok)/r.avg))
}

// branches is a session's tree as the catalog has it: each entry's
// children in file order.
type branches struct {
	kids map[string][]string
}

// setBranches sets each hit's branch: the last entry of a file that is
// one chain, else from the trees of the hits' sessions, read in one
// statement.
func (c *Catalog) setBranches(ctx context.Context, db *sql.DB, r *results) error {
	var files []int64
	for i := range r.hits {
		h := &r.hits[i]
		switch {
		case h.EntryID == "" || h.RunID != "":
		case !r.chains[i].forked && r.chains[i].last != "":
			h.Branch = r.chains[i].last
		case !slices.Contains(files, r.files[i]):
			files = append(files, r.files[i])
		}
	}
	if len(files) == 0 {
		return nil
	}
	// A row a file, not a row an entry: database/sql's cost per row is
	// more than SQLite's. Each id and parent is written with its length
	// in bytes before it: "2:e1" "0:" for an entry e1 without a parent.
	rows, err := c.rows(ctx, db, `SELECT file, group_concat(length(CAST(eid AS BLOB)) || ':' || eid ||
		length(CAST(parent AS BLOB)) || ':' || parent, '' ORDER BY off)
		FROM entries WHERE file IN (SELECT value FROM json_each(?)) AND eid != '' GROUP BY file`, jsonIDs(files))
	trees := map[int64]*branches{}
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var file int64
		var list string
		if err := rows.Scan(&file, &list); err != nil {
			return err
		}
		b := &branches{kids: map[string][]string{}}
		for list != "" {
			var id, parent string
			var ok bool
			if id, list, ok = cutSized(list); ok {
				parent, list, ok = cutSized(list)
			}
			if !ok {
				return fmt.Errorf("the tree of file %d: %w", file, errDamaged)
			}
			b.kids[parent] = append(b.kids[parent], id)
		}
		trees[file] = b
		return nil
	})
	if err != nil {
		return err
	}
	for i := range r.hits {
		if h := &r.hits[i]; h.EntryID != "" && h.RunID == "" && h.Branch == "" {
			t := trees[r.files[i]]
			if t == nil {
				t = &branches{} // no entry rows: the entry is its own leaf
			}
			h.Branch = t.leaf(h.EntryID)
		}
	}
	return nil
}

// cutSized cuts a string written as its length, a colon and itself from
// the front of s.
func cutSized(s string) (v, rest string, ok bool) {
	n, rest, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", false
	}
	k, err := strconv.Atoi(n)
	if err != nil || k < 0 || k > len(rest) {
		return "", "", false
	}
	return rest[:k], rest[k:], true
}

// leaf follows id's newest child down to a leaf.
func (b *branches) leaf(id string) string {
	seen := map[string]bool{}
	for !seen[id] {
		seen[id] = true
		kids := b.kids[id]
		if len(kids) == 0 {
			return id
		}
		id = kids[len(kids)-1]
	}
	return id // a cycle: stop where it closes
}

// entryTexts reads an entry (a session's title: its header; a run's
// record) back from its file: the texts the catalog indexed of it.
func (c *Catalog) entryTexts(ctx context.Context, sc *scratch, h Hit, off, n int64) ([]string, error) {
	line, err := readLine(ctx, c.st, sc.line, h.Path, off, n)
	if err != nil {
		return nil, nil
	}
	sc.line = line
	var d doc
	var ok bool
	switch {
	case h.RunID != "":
		d, ok, _ = parseRunRecord(line, off)
	case h.EntryID == "":
		if hd, ok := parseHeader(line); ok {
			return []string{hd.title}, nil
		}
		return nil, nil
	default:
		if sc.members == nil {
			sc.members = make(jsonscan.Members, 0, 16)
		}
		d, ok = parseTexts(line, sc.members[:0])
	}
	if !ok {
		return nil, nil
	}
	err = c.resolve(ctx, &d)
	return d.texts, err
}

// readLine reads the n bytes of name at off into b: through the
// storage's one positioned read (backend.ReadRange) for a line of up to
// a MiB, else through a reader, b grown as bytes come (n is the
// catalog's word, and a damaged catalog's may be anything). A file that
// ends first gives fewer bytes.
func readLine(ctx context.Context, st backend.Storage, b []byte, name string, off, n int64) ([]byte, error) {
	if n >= 0 && n <= 1<<20 {
		b = slices.Grow(b[:0], int(n))[:n]
		k, err := backend.ReadRange(ctx, st, name, off, b)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return b[:k], nil
	}
	rc, err := st.OpenRange(ctx, name, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readSized(rc, b, n)
}

// readSized reads r to its end into b, grown first for n bytes (up to a
// MiB, then as needed): io.ReadAll would start small and regrow.
func readSized(r io.Reader, b []byte, n int64) ([]byte, error) {
	b = slices.Grow(b[:0], int(min(max(n, 0), 1<<20)+1))
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, len(b))
		}
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// tokens cuts texts into their tokens as indexed, in sc's memory: one
// allocation for the lot, not one a token. It notes where each text's
// tokens end and the place of each token's word in its text, which the
// snippet marks: a hit's text is not cut into words a second time.
func (sc *scratch) tokens(texts []string) []string {
	sc.toks, sc.at = sc.toks[:0], sc.at[:0]
	sc.all, sc.spans, sc.ends = sc.all[:0], sc.spans[:0], sc.ends[:0]
	for _, text := range texts {
		for i := 0; ; {
			at, plain, ok := nextWord(text, i)
			if !ok {
				break
			}
			i = at.end
			start := len(sc.toks)
			if plain && at.end-at.start <= maxWord {
				// Most words: one token, the word itself (appendWord).
				sc.toks = append(append(sc.toks, ' '), text[at.start:at.end]...)
				sc.at = append(sc.at, start+1, len(sc.toks))
				sc.spans = append(sc.spans, at)
				continue
			}
			sc.toks = appendWord(sc.toks, text[at.start:at.end])
			for j := start; j < len(sc.toks); {
				from, end := nextToken(sc.toks, j)
				if end > from {
					sc.at = append(sc.at, from, end)
					sc.spans = append(sc.spans, at)
				}
				j = end
			}
		}
		sc.ends = append(sc.ends, len(sc.spans))
	}
	s := string(sc.toks)
	for i := 0; i < len(sc.at); i += 2 {
		sc.all = append(sc.all, s[sc.at[i]:sc.at[i+1]])
	}
	return sc.all
}
