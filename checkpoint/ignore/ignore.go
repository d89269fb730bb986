package ignore

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Defaults returns the patterns a tree snapshot skips unless told
// otherwise: version control metadata, dependency caches and build outputs,
// which agents do not edit and which are large.
func Defaults() []string {
	return []string{
		".git/", ".hg/", ".svn/", ".jj/",
		"node_modules/", "bower_components/", ".pnpm-store/",
		".venv/", "venv/", "__pycache__/", "*.pyc", ".mypy_cache/", ".pytest_cache/", ".tox/",
		"dist/", "build/", "target/", ".next/", ".nuxt/", ".turbo/", ".gradle/", ".parcel-cache/",
		"*.o", "*.class",
		".DS_Store",
	}
}

// Rule is one line of a .gitignore file, compiled.
type Rule struct {
	base    string // directory of the .gitignore, relative to the root; "" for the root
	negate  bool   // "!pattern"
	dirOnly bool   // "pattern/"
	// Exactly one way of matching is set. Unanchored rules match the last
	// element of the path, anchored ones the path relative to base.
	anchored bool
	isSuffix bool           // "*literal": HasSuffix on the last element
	literal  string         // no wildcard: compare; with isSuffix, the suffix
	re       *regexp.Regexp // everything else
}

// Parse compiles the lines of a .gitignore file found in directory base
// (slash-separated, relative to the root; "" for the root).
// Lines it cannot compile (a bad character class) are skipped, as git does.
func Parse(base string, text []byte) []Rule {
	var rules []Rule
	for line := range strings.SplitSeq(string(text), "\n") {
		if r, ok := Compile(base, line); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

// CompilePatterns compiles patterns given one by one (a manifest's), as
// Parse compiles the lines of a file.
func CompilePatterns(base string, patterns []string) []Rule {
	var rules []Rule
	for _, p := range patterns {
		if r, ok := Compile(base, p); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

// Compile compiles one pattern line; ok is false for blanks, comments
// and patterns that match nothing.
func Compile(base, line string) (Rule, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' || !utf8.ValidString(line) {
		return Rule{}, false
	}
	r := Rule{base: base}
	switch {
	case line[0] == '!':
		r.negate = true
		line = line[1:]
	case strings.HasPrefix(line, `\!`), strings.HasPrefix(line, `\#`):
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return Rule{}, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			return Rule{}, false
		}
	}
	switch {
	case !strings.ContainsAny(line, `*?[\`):
		r.literal = line
	case !r.anchored && line[0] == '*' && !strings.ContainsAny(line[1:], `*?[\`):
		r.isSuffix, r.literal = true, line[1:]
	default:
		expr, err := globRegexp(line)
		if err != nil {
			return Rule{}, false
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return Rule{}, false
		}
		r.re = re
	}
	return r, true
}

// trimTrailingSpaces drops trailing spaces unless escaped with a backslash.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		if strings.HasSuffix(s, `\ `) {
			return s[:len(s)-2] + " "
		}
		s = s[:len(s)-1]
	}
	return s
}

// globRegexp translates a gitignore glob to an anchored regular expression:
// "*" and "?" never match "/", "**/" at the start and "/**/" in the middle
// match zero or more directories, a trailing "/**" matches everything inside.
func globRegexp(p string) (string, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); {
		switch {
		case strings.HasPrefix(p[i:], "**") && (i == 0 || p[i-1] == '/') && (i+2 == len(p) || p[i+2] == '/'):
			switch {
			case i+2 == len(p): // trailing "/**", or the whole pattern "**"
				b.WriteString(".*")
				i += 2
			default: // "**/" at the start or "/**/" in the middle
				b.WriteString("(?:.*/)?")
				i += 3
			}
		case p[i] == '*':
			for i < len(p) && p[i] == '*' {
				i++
			}
			b.WriteString("[^/]*")
		case p[i] == '?':
			b.WriteString("[^/]")
			i++
		case p[i] == '[':
			class, n, ok := globClass(p[i:])
			if !ok {
				b.WriteString(`\[`)
				i++
				continue
			}
			b.WriteString(class)
			i += n
		case p[i] == '\\':
			if i+1 == len(p) {
				return "", fmt.Errorf("trailing backslash in %q", p)
			}
			_, size := utf8.DecodeRuneInString(p[i+1:])
			b.WriteString(regexp.QuoteMeta(p[i+1 : i+1+size]))
			i += 1 + size
		default:
			_, size := utf8.DecodeRuneInString(p[i:])
			b.WriteString(regexp.QuoteMeta(p[i : i+size]))
			i += size
		}
	}
	b.WriteString("$")
	return b.String(), nil
}

// globClass translates a bracket expression at the start of p. It returns
// the regexp class, the bytes consumed and false when the bracket is not
// closed (then "[" is a literal).
func globClass(p string) (string, int, bool) {
	i := 1
	var b strings.Builder
	b.WriteString("[")
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		b.WriteString("^/") // a negated class still never matches "/"
		i++
	}
	// next reads one class member, unescaping "\x".
	next := func() (rune, bool) {
		if i < len(p) && p[i] == '\\' {
			i++
		}
		if i >= len(p) {
			return 0, false
		}
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		return r, true
	}
	first := true
	for i < len(p) {
		if p[i] == ']' && !first {
			return b.String() + "]", i + 1, true
		}
		first = false
		lo, ok := next()
		if !ok {
			break
		}
		b.WriteString(classRune(lo))
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			i++
			hi, ok := next()
			if !ok {
				break
			}
			if hi < lo {
				return "", 0, false
			}
			b.WriteString("-" + classRune(hi))
		}
	}
	return "", 0, false
}

// classRune writes r for use inside a regexp class.
func classRune(r rune) string {
	if r < utf8.RuneSelf && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r) {
		return `\` + string(r)
	}
	return string(r)
}

// Matches reports whether the rule matches rel (relative to the root).
func (r *Rule) Matches(rel string, isDir bool) bool {
	return r.matchesName(rel, rel[strings.LastIndexByte(rel, '/')+1:], isDir)
}

// matchesName is matches with rel's last element, name, found once for
// every rule.
func (r *Rule) matchesName(rel, name string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.base != "" {
		if len(rel) <= len(r.base) || rel[len(r.base)] != '/' || !strings.HasPrefix(rel, r.base) {
			return false
		}
		rel = rel[len(r.base)+1:]
	}
	// Unanchored, a rule matches the last element, whatever its base.
	subject := name
	if r.anchored {
		subject = rel
	}
	switch {
	case r.re != nil:
		return r.re.MatchString(subject)
	case r.isSuffix:
		return strings.HasSuffix(subject, r.literal)
	default:
		return subject == r.literal
	}
}

// Matcher decides which paths a tree snapshot skips. rules are in order of
// precedence (later wins): the defaults, then .gitignore files from the root
// down; extra rules given by the caller come last and win over all. It is
// safe for concurrent use.
type Matcher struct {
	rules []Rule
	extra []Rule

	once sync.Once
	fast *nameRules // see fastRules
}

// nameRules are rules without a negation, sorted by how they match: with no
// "!" anywhere, a path is ignored when any rule matches it, in any order,
// and the rules most sets are made of (a name, "*.ext", with or without a
// trailing slash, from the root's rules) need no loop over all of them.
type nameRules struct {
	names, dirNames       map[string]bool
	suffixes, dirSuffixes []string
	rest                  []Rule
	// first holds the first bytes of names and dirNames: most names of a
	// tree start with none of them, and are passed without hashing them
	// for a map lookup (a tenth of the walk's own work, per entry).
	first [4]uint64
}

// addFirst records the first byte of a key of names or dirNames.
func (f *nameRules) addFirst(name string) {
	if name != "" {
		f.first[name[0]>>6] |= 1 << (name[0] & 63)
	}
}

// mayName reports whether name may be a key of names or dirNames.
func (f *nameRules) mayName(name string) bool {
	return name != "" && f.first[name[0]>>6]&(1<<(name[0]&63)) != 0
}

// New returns a Matcher of rules in order of precedence, then extra, which
// win over every rule, including those With adds.
func New(rules, extra []Rule) *Matcher { return &Matcher{rules: rules, extra: extra} }

// fastRules returns ig's rules as nameRules, or nil when one negates.
func (ig *Matcher) fastRules() *nameRules {
	ig.once.Do(func() {
		f := &nameRules{names: map[string]bool{}, dirNames: map[string]bool{}}
		for _, set := range [2][]Rule{ig.rules, ig.extra} {
			for _, r := range set {
				switch {
				case r.negate:
					return
				case r.base != "" || r.anchored || r.re != nil:
					f.rest = append(f.rest, r)
				case r.isSuffix && r.dirOnly:
					f.dirSuffixes = append(f.dirSuffixes, r.literal)
				case r.isSuffix:
					f.suffixes = append(f.suffixes, r.literal)
				case r.dirOnly:
					f.dirNames[r.literal] = true
					f.addFirst(r.literal)
				default:
					f.names[r.literal] = true
					f.addFirst(r.literal)
				}
			}
		}
		ig.fast = f
	})
	return ig.fast
}

func (f *nameRules) ignored(rel, name string, isDir bool) bool {
	if f.mayName(name) && (f.names[name] || isDir && f.dirNames[name]) {
		return true
	}
	for _, s := range f.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	if isDir {
		for _, s := range f.dirSuffixes {
			if strings.HasSuffix(name, s) {
				return true
			}
		}
	}
	for i := range f.rest {
		if f.rest[i].matchesName(rel, name, isDir) {
			return true
		}
	}
	return false
}

// ignored reports whether rel is ignored. Parents are not consulted: the
// walk never descends into an ignored directory, as git does not.
func (ig *Matcher) Ignored(rel string, isDir bool) bool {
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	if f := ig.fastRules(); f != nil {
		return f.ignored(rel, name, isDir)
	}
	return ig.inOrder(rel, name, isDir)
}

// inOrder runs every rule in order, the last that matches deciding.
func (ig *Matcher) inOrder(rel, name string, isDir bool) bool {
	ign := false
	for _, set := range [2][]Rule{ig.rules, ig.extra} {
		for i := range set {
			if set[i].negate == ign && set[i].matchesName(rel, name, isDir) {
				ign = !set[i].negate
			}
		}
	}
	return ign
}

// with returns an Matcher that also applies rules (from a deeper .gitignore).
func (ig *Matcher) With(rules []Rule) *Matcher {
	if len(rules) == 0 {
		return ig
	}
	all := make([]Rule, 0, len(ig.rules)+len(rules))
	all = append(all, ig.rules...)
	all = append(all, rules...)
	return &Matcher{rules: all, extra: ig.extra}
}
