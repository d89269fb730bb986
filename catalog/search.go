package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"iter"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	var match strings.Builder
	exact := e.fts(&match)
	var where []string
	var args []any
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
	r := &results{limit: q.Limit, exact: exact, e: e, terms: e.positive(nil)}
	if r.limit <= 0 {
		r.limit = DefaultLimit
	}
	if r.rk, err = c.newRanker(ctx, db, r.terms); err != nil {
		return nil, err
	}
	// Many candidates: ask for them by length bucket, shortest first, so
	// that ordering them joins only the buckets the hits come from.
	passes := []string{""}
	if bound := e.bound(r.rk.docs, r.rk.n); bound > float64(c.cfg.bucketAbove) {
		terms, docs, err := lenBuckets(ctx, db)
		if err != nil {
			return nil, err
		}
		passes = bucketPasses(terms, docs, bound, r.rk.n, float64(4*r.limit))
	}
	for _, b := range passes {
		m := match.String()
		if b != "" {
			m = "(" + m + ") AND " + b
		}
		if err := c.collect(ctx, db, r, append([]string{"fts MATCH ?"}, where...), append([]any{m}, args...)); err != nil {
			return nil, err
		}
		if r.done() {
			break
		}
	}
	out := r.hits
	trees := map[int64]*branches{}
	for i := range out {
		if out[i].EntryID == "" || out[i].RunID != "" {
			continue
		}
		t := trees[r.files[i]]
		if t == nil {
			if t, err = c.loadBranches(ctx, db, r.files[i]); err != nil {
				return nil, err
			}
			trees[r.files[i]] = t
		}
		out[i].Branch = t.leaf(out[i].EntryID)
	}
	return out, nil
}

// results gathers a query's hits across its passes.
type results struct {
	limit    int
	exact    bool // FTS5's answer is the answer: no candidate is read back to check
	e        *expr
	terms    []*expr
	rk       *ranker
	hits     []Hit
	files    []int64 // hits[i]'s file row
	verified int     // candidates read back and checked
}

func (r *results) done() bool {
	return len(r.hits) >= r.limit || !r.exact && r.verified >= maxVerified
}

// collect adds the hits of one pass, best first, until the limit.
func (c *Catalog) collect(ctx context.Context, db *sql.DB, r *results, where []string, args []any) error {
	sqlLimit := r.limit - len(r.hits)
	if !r.exact {
		sqlLimit = maxVerified - r.verified
	}
	// bm25 with each term counted once (the index keeps no counts): for a
	// query, shorter entries first.
	rows, err := c.rows(ctx, db, `SELECT e.file, e.eid, e.ts, e.role, e.tools, e.off, e.len, f.path, f.session, f.cwd, f.title, e.ntok, f.run
		FROM fts JOIN entries e ON e.id = fts.rowid JOIN files f ON f.id = e.file
		WHERE `+strings.Join(where, " AND ")+` ORDER BY e.ntok, e.id LIMIT ?`, append(args, sqlLimit)...)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	for !r.done() && rows.Next() {
		var h Hit
		var file, ts, off, n, ntok int64
		var tools string
		if err := rows.Scan(&file, &h.EntryID, &ts, &h.Role, &tools, &off, &n, &h.Path, &h.SessionID, &h.Cwd, &h.Title, &ntok, &h.RunID); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		// The text, read back from the file: the snippet's, and the
		// check of what the index cannot tell (word order).
		texts := c.entryTexts(ctx, h, off, n)
		if !r.exact {
			r.verified++
			if !r.e.match(docTokens(texts)) {
				continue
			}
		}
		h.Snippet = makeSnippet(texts, r.terms, 200)
		h.Score = r.rk.score(ntok)
		if ts != 0 {
			h.Time = time.UnixMilli(ts).UTC()
		}
		h.Tools = strings.Fields(tools)
		r.hits = append(r.hits, h)
		r.files = append(r.files, file)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

// ranker scores hits by BM25 with every term counted once: the sum of
// the terms' IDF, scaled by the entry's length against the average.
type ranker struct {
	idf, avg float64
	n        float64           // entries
	docs     map[*expr]float64 // entries holding each term, at most
}

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

func (c *Catalog) newRanker(ctx context.Context, db *sql.DB, terms []*expr) (*ranker, error) {
	n, avg, err := c.sizes(ctx, db)
	if err != nil {
		return nil, err
	}
	r := &ranker{avg: avg, n: n, docs: map[*expr]float64{}}
	for _, t := range terms {
		docs := n
		for _, tok := range t.toks {
			// One look-up per token, each by fts5vocab's term constraint
			// (an IN list would scan the whole vocabulary).
			var d sql.NullFloat64
			var err error
			if t.op == opPrefix {
				err = c.scanRow(ctx, db, "SELECT sum(doc) FROM vocab WHERE term >= ? AND term < ?", []any{tok, tok + "\U0010FFFF"}, &d)
			} else {
				err = c.scanRow(ctx, db, "SELECT doc FROM vocab WHERE term = ?", []any{tok}, &d)
			}
			if err != nil && err != sql.ErrNoRows {
				return nil, fmt.Errorf("catalog: %w", err)
			}
			// A phrase is as rare as its rarest token, at most.
			docs = min(docs, d.Float64)
		}
		r.docs[t] = docs
		r.idf += math.Log((n-docs+0.5)/(docs+0.5) + 1)
	}
	return r, nil
}

// sizes returns the number of entries and their average length in
// tokens, which ranking needs: kept for a minute, or until this process
// changes the catalog.
func (c *Catalog) sizes(ctx context.Context, db *sql.DB) (n, avg float64, err error) {
	c.rankMu.Lock()
	defer c.rankMu.Unlock()
	if c.rankGen == c.gen.Load() && c.cfg.now().Sub(c.rankAt) < time.Minute {
		return c.rankN, c.rankAvg, nil
	}
	var sn, st sql.NullFloat64
	if err := c.scanRow(ctx, db, "SELECT nent, ntok FROM totals", nil, &sn, &st); err != nil {
		return 0, 0, fmt.Errorf("catalog: %w", err)
	}
	n, avg = sn.Float64, 1
	if sn.Float64 > 0 && st.Float64 > 0 {
		avg = st.Float64 / sn.Float64
	}
	c.rankN, c.rankAvg, c.rankGen, c.rankAt = n, avg, c.gen.Load(), c.cfg.now()
	return n, avg, nil
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

func (c *Catalog) loadBranches(ctx context.Context, db *sql.DB, file int64) (*branches, error) {
	rows, err := c.rows(ctx, db, "SELECT eid, parent FROM entries WHERE file = ? AND eid != '' ORDER BY id", file)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	b := &branches{kids: map[string][]string{}}
	for rows.Next() {
		var id, parent string
		if err := rows.Scan(&id, &parent); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		b.kids[parent] = append(b.kids[parent], id)
	}
	return b, rows.Err()
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
func (c *Catalog) entryTexts(ctx context.Context, h Hit, off, n int64) []string {
	rc, err := c.st.OpenRange(ctx, h.Path, off, n)
	if err != nil {
		return nil
	}
	line, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil
	}
	var d doc
	var ok bool
	switch {
	case h.RunID != "":
		d, ok, _ = parseRunRecord(line, off)
	case h.EntryID == "":
		if hd, ok := parseHeader(line); ok {
			return []string{hd.title}
		}
		return nil
	default:
		d, ok = parseEntry(line, make(jsonscan.Members, 0, 16))
	}
	if !ok {
		return nil
	}
	c.resolve(ctx, &d)
	return d.texts
}

// docTokens is the token list of an entry's texts, as indexed.
func docTokens(texts []string) []string {
	var b []byte
	for _, t := range texts {
		b = appendStream(b, t)
	}
	return strings.Fields(string(b))
}

// makeSnippet cuts about width bytes of texts around the first match of
// terms, the matching words marked.
func makeSnippet(texts []string, terms []*expr, width int) string {
	for _, text := range texts {
		marked := markWords(text, terms)
		if len(marked) == 0 {
			continue
		}
		from := max(0, marked[0].start-width/4)
		to := min(len(text), from+width)
		for from > 0 && !utf8.RuneStart(text[from]) {
			from--
		}
		for to < len(text) && !utf8.RuneStart(text[to]) {
			to++
		}
		var b strings.Builder
		if from > 0 {
			b.WriteString("…")
		}
		at := from
		for _, m := range marked {
			if m.start < from || m.end > to {
				continue
			}
			writeFlat(&b, text[at:m.start])
			b.WriteString(MarkOpen)
			b.WriteString(text[m.start:m.end])
			b.WriteString(MarkClose)
			at = m.end
		}
		writeFlat(&b, text[at:to])
		if to < len(text) {
			b.WriteString("…")
		}
		return b.String()
	}
	for _, text := range texts {
		if text != "" {
			var b strings.Builder
			writeFlat(&b, text[:min(len(text), width)])
			return strings.ToValidUTF8(b.String(), "")
		}
	}
	return ""
}

// writeFlat writes s with each run of white space as one space.
func writeFlat(b *strings.Builder, s string) {
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
}

// markWords returns the places of the words of text that terms match, in
// order.
func markWords(text string, terms []*expr) []span {
	var spans []span
	var toks []string
	var owner []int
	var buf []byte
	words(text, func(w string, at span) {
		buf = appendWord(buf[:0], w)
		if len(buf) == 0 {
			return
		}
		for _, t := range strings.Fields(string(buf)) {
			toks = append(toks, t)
			owner = append(owner, len(spans))
		}
		spans = append(spans, at)
	})
	hit := make([]bool, len(spans))
	any := false
	for _, t := range terms {
		for i := 0; i < len(toks); i++ {
			n := 0
			switch t.op {
			case opWord:
				if toks[i] == t.toks[0] {
					n = 1
				}
			case opPrefix:
				if strings.HasPrefix(toks[i], t.toks[0]) {
					n = 1
				}
			case opPhrase:
				if phraseHere(toks, t, i) {
					n = len(t.toks)
				}
			}
			for j := i; j < i+n; j++ {
				hit[owner[j]], any = true, true
			}
		}
	}
	if !any {
		return nil
	}
	var out []span
	for i, h := range hit {
		if h {
			out = append(out, spans[i])
		}
	}
	return out
}
