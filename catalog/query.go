package catalog

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadQuery is wrapped by every error about the text of a query (it also
// wraps fs.ErrInvalid): a command line reports it as a usage error.
var ErrBadQuery = fmt.Errorf("bad search query: %w", fs.ErrInvalid)

// Bounds on a query, so that any text is parsed and run in bounded time.
const (
	maxQueryBytes = 4096
	maxTerms      = 64
	maxDepth      = 16
)

type opKind uint8

const (
	opWord   opKind = iota // one token
	opPrefix               // tokens starting with one token
	opPhrase               // consecutive tokens
	opAnd
	opOr
	opNot // kids[0] and not kids[1]
)

// expr is a parsed query. It is turned into an FTS5 expression (fts) and
// evaluated on a token list (match), by the same rules.
type expr struct {
	op     opKind
	toks   []string
	parts  []bool // a phrase's tokens that are parts of a compound word
	prefix bool   // a phrase whose last token is a prefix
	kids   []*expr
}

func queryErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadQuery, fmt.Sprintf(format, args...))
}

// parseQuery parses the query syntax of docs/catalog.md: words, "phrases",
// prefix*, AND, OR, NOT (upper case) and parentheses; words side by side
// are ANDed. Any text gets an expression or an ErrBadQuery error.
func parseQuery(q string) (*expr, error) {
	switch {
	case len(q) > maxQueryBytes:
		return nil, queryErr("%d bytes; at most %d", len(q), maxQueryBytes)
	case strings.IndexByte(q, 0) >= 0:
		return nil, queryErr("NUL byte")
	case !utf8.ValidString(q):
		return nil, queryErr("not valid UTF-8")
	}
	lx, err := lex(q)
	if err != nil {
		return nil, err
	}
	p := &parser{lx: lx}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.lx) {
		return nil, queryErr("unexpected %s", p.lx[p.i].text)
	}
	if e == nil {
		return nil, queryErr("nothing to search for")
	}
	return e, nil
}

type lexKind uint8

const (
	lxTerm lexKind = iota
	lxOpen
	lxClose
	lxAnd
	lxOr
	lxNot
)

type lexeme struct {
	kind lexKind
	text string
	term *expr // lxTerm: nil when the text has no word (punctuation)
}

// lex cuts a query into terms, parentheses and operators.
func lex(q string) ([]lexeme, error) {
	var out []lexeme
	terms := 0
	for i := 0; i < len(q); {
		r, n := utf8.DecodeRuneInString(q[i:])
		switch {
		case unicode.IsSpace(r):
			i += n
			continue
		case r == '(':
			out = append(out, lexeme{kind: lxOpen, text: "("})
			i++
			continue
		case r == ')':
			out = append(out, lexeme{kind: lxClose, text: ")"})
			i++
			continue
		}
		var lx lexeme
		if r == '"' {
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				return nil, queryErr("unbalanced quote at byte %d", i)
			}
			text := q[i+1 : i+1+end]
			lx = lexeme{kind: lxTerm, text: strconv.Quote(text), term: phraseTerm(text)}
			i += end + 2
		} else {
			end := i
			for end < len(q) {
				r, n := utf8.DecodeRuneInString(q[end:])
				if unicode.IsSpace(r) || r == '(' || r == ')' || r == '"' {
					break
				}
				end += n
			}
			text := q[i:end]
			i = end
			switch text {
			case "AND":
				lx = lexeme{kind: lxAnd, text: text}
			case "OR":
				lx = lexeme{kind: lxOr, text: text}
			case "NOT":
				lx = lexeme{kind: lxNot, text: text}
			default:
				lx = lexeme{kind: lxTerm, text: text, term: bareTerm(text)}
			}
		}
		if lx.kind == lxTerm && lx.term != nil {
			if terms++; terms > maxTerms {
				return nil, queryErr("more than %d terms", maxTerms)
			}
		}
		out = append(out, lx)
	}
	return out, nil
}

// phraseTerm is a quoted phrase: its tokens in order, each word's parts
// marked.
func phraseTerm(text string) *expr {
	var toks []string
	var parts []bool
	words(text, func(w string, _ span) {
		for i, t := range strings.Fields(string(appendWord(nil, w))) {
			toks, parts = append(toks, t), append(parts, i > 0)
		}
	})
	switch len(toks) {
	case 0:
		return nil
	case 1:
		return &expr{op: opWord, toks: toks}
	}
	return &expr{op: opPhrase, toks: toks, parts: parts}
}

// bareTerm is an unquoted term: one word matches its whole form (so
// parseRef finds parse_ref), several (cas/ref.go) are a phrase of their
// tokens. A trailing * makes the last word's whole form a prefix.
func bareTerm(text string) *expr {
	prefix := strings.HasSuffix(text, "*")
	text = strings.TrimRight(text, "*")
	var ws []string
	words(text, func(w string, _ span) {
		if t := appendWord(nil, w); len(t) > 0 {
			ws = append(ws, w)
		}
	})
	if len(ws) == 0 {
		return nil
	}
	if len(ws) == 1 {
		whole := string(appendLower(nil, ws[0]))
		if prefix {
			return &expr{op: opPrefix, toks: []string{whole}}
		}
		return &expr{op: opWord, toks: []string{whole}}
	}
	if !prefix {
		return phraseTerm(text)
	}
	var toks []string
	var parts []bool
	for _, w := range ws[:len(ws)-1] {
		for i, t := range strings.Fields(string(appendWord(nil, w))) {
			toks, parts = append(toks, t), append(parts, i > 0)
		}
	}
	toks, parts = append(toks, string(appendLower(nil, ws[len(ws)-1]))), append(parts, false)
	return &expr{op: opPhrase, toks: toks, parts: parts, prefix: true}
}

func (e *expr) lastIsPrefix() bool { return e.op == opPrefix || e.prefix }

type parser struct {
	lx []lexeme
	i  int
}

func (p *parser) peek() (lexKind, bool) {
	if p.i >= len(p.lx) {
		return 0, false
	}
	return p.lx[p.i].kind, true
}

// or: and (OR and)*.
func (p *parser) or(depth int) (*expr, error) {
	left, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for {
		k, ok := p.peek()
		if !ok || k != lxOr {
			return left, nil
		}
		p.i++
		right, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		if left == nil || right == nil {
			return nil, queryErr("OR needs a term on each side")
		}
		left = &expr{op: opOr, kids: []*expr{left, right}}
	}
}

// and: not ((AND)? not)*.
func (p *parser) and(depth int) (*expr, error) {
	left, err := p.not(depth)
	if err != nil {
		return nil, err
	}
	for {
		k, ok := p.peek()
		if !ok || k == lxOr || k == lxClose {
			return left, nil
		}
		explicit := k == lxAnd
		if explicit {
			p.i++
		}
		right, err := p.not(depth)
		if err != nil {
			return nil, err
		}
		switch {
		case explicit && (left == nil || right == nil):
			return nil, queryErr("AND needs a term on each side")
		case right == nil:
		case left == nil:
			left = right
		default:
			left = &expr{op: opAnd, kids: []*expr{left, right}}
		}
	}
}

// not: primary (NOT primary)*.
func (p *parser) not(depth int) (*expr, error) {
	if k, ok := p.peek(); ok && k == lxNot {
		return nil, queryErr("NOT needs a term before it (a NOT b)")
	}
	left, err := p.primary(depth)
	if err != nil {
		return nil, err
	}
	for {
		k, ok := p.peek()
		if !ok || k != lxNot {
			return left, nil
		}
		p.i++
		right, err := p.primary(depth)
		if err != nil {
			return nil, err
		}
		if left == nil || right == nil {
			return nil, queryErr("NOT needs a term on each side")
		}
		left = &expr{op: opNot, kids: []*expr{left, right}}
	}
}

// primary: a term or a parenthesised query; nil for punctuation alone.
func (p *parser) primary(depth int) (*expr, error) {
	k, ok := p.peek()
	if !ok {
		return nil, queryErr("the query ends with an operator")
	}
	lx := p.lx[p.i]
	switch k {
	case lxTerm:
		p.i++
		return lx.term, nil
	case lxOpen:
		if depth >= maxDepth {
			return nil, queryErr("parentheses nested deeper than %d", maxDepth)
		}
		p.i++
		e, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if k, ok := p.peek(); !ok || k != lxClose {
			return nil, queryErr("unbalanced parenthesis")
		}
		p.i++
		return e, nil
	}
	return nil, queryErr("unexpected %s", lx.text)
}

// fts writes an FTS5 expression that matches at least the entries e
// matches, and reports whether it matches exactly those. The index keeps
// no positions (detail=none), so a phrase is written as the AND of its
// words' whole forms (a superset), and a NOT whose right side is not exact is left
// out (its left side alone, a superset again); the caller checks the
// candidates of an inexact expression against the text. Tokens are
// letters and digits only, quoted all the same, so no text of the user's
// reaches FTS5's syntax.
func (e *expr) fts(b *strings.Builder) (exact bool) {
	switch e.op {
	case opWord, opPrefix:
		b.WriteByte('"')
		b.WriteString(e.toks[0])
		b.WriteByte('"')
		if e.op == opPrefix {
			b.WriteByte('*')
		}
		return true
	case opPhrase:
		// The words' whole forms: an entry holding a compound's whole
		// form almost always holds its parts, and each token more is a
		// doclist more for FTS5 to walk.
		b.WriteByte('(')
		first := true
		for i, t := range e.toks {
			if i < len(e.parts) && e.parts[i] {
				continue
			}
			if !first {
				b.WriteString(" AND ")
			}
			first = false
			b.WriteByte('"')
			b.WriteString(t)
			b.WriteByte('"')
			if i == len(e.toks)-1 && e.prefix {
				b.WriteByte('*')
			}
		}
		b.WriteByte(')')
		return false
	case opNot:
		if !e.kids[1].exactAlone() {
			e.kids[0].fts(b)
			return false
		}
	}
	op := map[opKind]string{opAnd: " AND ", opOr: " OR ", opNot: " NOT "}[e.op]
	b.WriteByte('(')
	left := e.kids[0].fts(b)
	b.WriteString(op)
	right := e.kids[1].fts(b)
	b.WriteByte(')')
	return left && right
}

// exactAlone reports whether e has no phrase: its FTS5 expression is exact.
func (e *expr) exactAlone() bool {
	switch e.op {
	case opWord, opPrefix:
		return true
	case opPhrase:
		return false
	}
	return e.kids[0].exactAlone() && e.kids[1].exactAlone()
}

// match evaluates e on a document's tokens, as FTS5 does on the index.
func (e *expr) match(doc []string) bool {
	switch e.op {
	case opWord:
		return slices.Contains(doc, e.toks[0])
	case opPrefix:
		return slices.ContainsFunc(doc, func(t string) bool { return strings.HasPrefix(t, e.toks[0]) })
	case opPhrase:
		return phraseAt(doc, e, 0) >= 0
	case opAnd:
		return e.kids[0].match(doc) && e.kids[1].match(doc)
	case opOr:
		return e.kids[0].match(doc) || e.kids[1].match(doc)
	case opNot:
		return e.kids[0].match(doc) && !e.kids[1].match(doc)
	}
	return false
}

// phraseAt is the first index from i where the phrase e starts in doc, or -1.
func phraseAt(doc []string, e *expr, i int) int {
	for ; i+len(e.toks) <= len(doc); i++ {
		if phraseHere(doc, e, i) {
			return i
		}
	}
	return -1
}

// phraseHere reports whether the phrase e starts at doc[i].
func phraseHere(doc []string, e *expr, i int) bool {
	n := len(e.toks)
	if i+n > len(doc) {
		return false
	}
	for j, t := range e.toks {
		if j == n-1 && e.lastIsPrefix() {
			if !strings.HasPrefix(doc[i+j], t) {
				return false
			}
		} else if doc[i+j] != t {
			return false
		}
	}
	return true
}

// positive collects the terms whose matches a snippet highlights: all but
// those on the right of a NOT.
func (e *expr) positive(out []*expr) []*expr {
	switch e.op {
	case opAnd, opOr:
		return e.kids[1].positive(e.kids[0].positive(out))
	case opNot:
		return e.kids[0].positive(out)
	}
	return append(out, e)
}
