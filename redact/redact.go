package redact

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// Finding is one secret in a text.
type Finding struct {
	Detector   string // rule id: "aws-access-token", "high-entropy", a user rule's id
	Start, End int    // byte offsets of the secret in the text scanned
	// Excerpt is the secret's line around it, every secret in it masked;
	// it never holds a secret.
	Excerpt string
}

// Rule is a detector of the user's (the store's config, `redact.rules`).
type Rule struct {
	ID    string `json:"id"`
	Regex string `json:"regex"`
	// SecretGroup is the capture group holding the secret; 0 means the
	// first group that matched, or the whole match when there is none.
	SecretGroup int `json:"secretGroup,omitempty"`
	// Keywords, when set, make the rule run only on text that holds one
	// of them (case-insensitive).
	Keywords []string `json:"keywords,omitempty"`
	// Entropy is the least Shannon entropy (bits per character) a secret
	// must have.
	Entropy float64 `json:"entropy,omitempty"`
}

// Option configures New.
type Option func(*options)

type options struct {
	rules      []Rule
	allow      []string
	noEntropy  bool
	noBuiltins bool
}

// WithRules adds the user's rules to the built-in ones.
func WithRules(rs ...Rule) Option { return func(o *options) { o.rules = append(o.rules, rs...) } }

// WithAllow adds regular expressions of values that are never secrets
// (a test fixture's fake key, say), checked against each secret found.
func WithAllow(patterns ...string) Option {
	return func(o *options) { o.allow = append(o.allow, patterns...) }
}

// WithoutEntropy turns the high-entropy detector off: only rules of known
// formats (and the user's) find secrets.
func WithoutEntropy() Option { return func(o *options) { o.noEntropy = true } }

// OnlyRules keeps only the user's rules: no built-in detector runs.
func OnlyRules() Option { return func(o *options) { o.noBuiltins = true } }

// ErrBadRule is wrapped by New's error for a user rule that does not
// compile or names no id.
var ErrBadRule = fmt.Errorf("redact: bad rule: %w", fs.ErrInvalid)

// Detector finds secrets. Build one with New and share it: it is safe for
// concurrent use.
type Detector struct {
	rules     []*rule
	always    []*rule // rules without keywords
	byKeyword [][]*rule
	trie      *ahocorasick.Trie
	allow     []*regexp.Regexp
	entropy   bool
}

// New compiles the built-in detectors (unless OnlyRules) and the user's
// rules.
func New(opts ...Option) (*Detector, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	d := &Detector{entropy: !o.noEntropy && !o.noBuiltins}
	if !o.noBuiltins {
		rs, err := gitleaksRules()
		if err != nil {
			return nil, err
		}
		d.rules = append(d.rules, rs...)
		d.rules = append(d.rules, ownRules()...)
	}
	for _, r := range o.rules {
		cr, err := compileRule(r)
		if err != nil {
			return nil, err
		}
		d.rules = append(d.rules, cr)
	}
	for _, p := range o.allow {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: allow %q: %v", ErrBadRule, p, err)
		}
		d.allow = append(d.allow, re)
	}
	d.index()
	return d, nil
}

func compileRule(r Rule) (*rule, error) {
	if r.ID == "" {
		return nil, fmt.Errorf("%w: a rule has no id", ErrBadRule)
	}
	re, err := regexp.Compile(r.Regex)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadRule, r.ID, err)
	}
	if r.SecretGroup < 0 || r.SecretGroup > re.NumSubexp() {
		return nil, fmt.Errorf("%w: %s: secretGroup %d of %d groups", ErrBadRule, r.ID, r.SecretGroup, re.NumSubexp())
	}
	kw := make([]string, len(r.Keywords))
	for i, k := range r.Keywords {
		kw[i] = strings.ToLower(k)
	}
	return &rule{id: r.ID, re: re, group: r.SecretGroup, keywords: kw, entropy: r.Entropy}, nil
}

// index builds the keyword filter: a rule with keywords runs only on text
// holding one, as gitleaks does; one pass of Aho-Corasick finds them all.
func (d *Detector) index() {
	var words []string
	seen := map[string]int{}
	for _, r := range d.rules {
		if len(r.keywords) == 0 {
			d.always = append(d.always, r)
			continue
		}
		for _, k := range r.keywords {
			i, ok := seen[k]
			if !ok {
				i = len(words)
				seen[k] = i
				words = append(words, k)
				d.byKeyword = append(d.byKeyword, nil)
			}
			d.byKeyword[i] = append(d.byKeyword[i], r)
		}
	}
	if len(words) > 0 {
		d.trie = ahocorasick.NewTrieBuilder().AddStrings(words).Build()
	}
}

// Find returns the secrets in text, in order, none overlapping.
func (d *Detector) Find(text string) []Finding {
	spans := d.find(text)
	out := make([]Finding, len(spans))
	for i, s := range spans {
		out[i] = Finding{Detector: s.id, Start: s.start, End: s.end, Excerpt: excerpt(text, spans, i)}
	}
	return out
}

// Redact returns text with each secret replaced by [REDACTED:detector],
// and the findings (offsets into the text given).
func (d *Detector) Redact(text string) (string, []Finding) {
	fs := d.Find(text)
	if len(fs) == 0 {
		return text, nil
	}
	return Replace(text, fs), fs
}

// Replace puts [REDACTED:detector] in place of each finding of text.
func Replace(text string, fs []Finding) string {
	var b strings.Builder
	last := 0
	for _, f := range fs {
		b.WriteString(text[last:f.Start])
		b.WriteString(Placeholder(f.Detector))
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// Placeholder is what a secret found by detector is replaced with.
func Placeholder(detector string) string { return "[REDACTED:" + detector + "]" }

type span struct {
	id         string
	start, end int
	prio       int // lower wins a tie: specific rules before generic ones
}

// find runs every detector and merges what they found: overlapping spans
// become one, named by the most specific detector among them.
func (d *Detector) find(text string) []span {
	if text == "" {
		return nil
	}
	var spans []span
	add := func(r *rule, start, end int) {
		if d.allowed(text[start:end]) || placeholder(text[start:end]) || hashed(text[:start]) {
			return
		}
		spans = append(spans, span{r.id, start, end, r.prio})
	}
	for _, r := range d.candidates(text) {
		r.match(text, add)
	}
	if d.entropy {
		for _, s := range highEntropy(text) {
			if !d.allowed(text[s.start:s.end]) {
				spans = append(spans, s)
			}
		}
	}
	return merge(spans)
}

// candidates are the rules to run on text: those without keywords and
// those whose keywords it holds.
func (d *Detector) candidates(text string) []*rule {
	rs := append([]*rule(nil), d.always...)
	if d.trie == nil {
		return rs
	}
	lower := []byte(strings.ToLower(text))
	hit := make(map[*rule]bool)
	d.trie.Walk(lower, func(_, _, pattern int64) bool {
		for _, r := range d.byKeyword[pattern] {
			if !hit[r] {
				hit[r] = true
				rs = append(rs, r)
			}
		}
		return true
	})
	return rs
}

func (d *Detector) allowed(secret string) bool {
	for _, re := range d.allow {
		if re.MatchString(secret) {
			return true
		}
	}
	return false
}

func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.end != b.end {
			return a.end > b.end
		}
		return a.prio < b.prio
	})
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start >= last.end {
			out = append(out, s)
			continue
		}
		if s.prio < last.prio {
			last.id, last.prio = s.id, s.prio
		}
		last.end = max(last.end, s.end)
	}
	return out
}

// excerptWidth is how much of the line on each side of a secret an excerpt
// shows.
const excerptWidth = 24

// excerpt is the line around spans[i], every secret in it masked.
func excerpt(text string, spans []span, i int) string {
	s := spans[i]
	from := max(0, s.start-excerptWidth)
	if k := strings.LastIndexByte(text[from:s.start], '\n'); k >= 0 {
		from += k + 1
	}
	to := min(len(text), s.end+excerptWidth)
	if k := strings.IndexByte(text[s.end:to], '\n'); k >= 0 {
		to = s.end + k
	}
	for from > 0 && !utf8.RuneStart(text[from]) {
		from++
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to--
	}
	var b strings.Builder
	pos := from
	for _, o := range spans {
		if o.end <= from || o.start >= to {
			continue
		}
		st, en := max(o.start, from), min(o.end, to)
		b.WriteString(text[pos:st])
		b.WriteString(Mask(text[o.start:o.end]))
		pos = en
	}
	b.WriteString(text[pos:to])
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// Mask shows a secret's first few characters (at most a sixth of it, so
// what is shown never narrows a guess much) and stars for the rest.
func Mask(secret string) string {
	n := utf8.RuneCountInString(secret)
	keep := min(4, n/6)
	r := []rune(secret)
	return string(r[:keep]) + strings.Repeat("*", min(12, max(4, n-keep)))
}
