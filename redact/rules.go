package redact

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// rule is one compiled detector.
type rule struct {
	id       string
	re       *regexp.Regexp
	group    int // 0: the first group that matched, else the whole match
	keywords []string
	entropy  float64 // least entropy of the secret; 0: none asked
	prio     int     // lower names a merged span
	// allow is gitleaks's allowlists of the rule and the global ones.
	allow []*allowlist
	// keep, where set, has the last word on a secret found in a match
	// (own rules).
	keep func(match, secret string) bool
	// digit asks the secret to hold a digit (generic rules: words and
	// identifiers rarely do, keys nearly always).
	digit bool
}

// Priorities: a named format names a span before a generic rule, which
// names it before the entropy detector.
const (
	prioFormat = iota
	prioGeneric
	prioEntropy
)

// match calls add with the bounds of each secret r finds in text.
func (r *rule) match(text string, add func(r *rule, start, end int)) {
	for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[0], m[1]
		if r.group > 0 && m[2*r.group] >= 0 {
			start, end = m[2*r.group], m[2*r.group+1]
		} else if r.group == 0 {
			for g := 1; 2*g < len(m); g++ {
				if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
					start, end = m[2*g], m[2*g+1]
					break
				}
			}
		}
		// Multi-line matches (private keys) keep their inner lines but
		// not a trailing newline.
		for end > start && text[end-1] == '\n' {
			end--
		}
		if end <= start {
			continue
		}
		secret := text[start:end]
		if r.entropy > 0 && entropy(secret) <= r.entropy {
			continue
		}
		if r.digit && !strings.ContainsAny(secret, "0123456789") {
			continue
		}
		if r.keep != nil && !r.keep(text[m[0]:m[1]], secret) {
			continue
		}
		if r.allowed(text, m[0], m[1], secret) {
			continue
		}
		add(r, start, end)
	}
}

// allowed applies gitleaks's allowlists to a secret found in text at
// match [ms, me), as gitleaks's Allowlist does. Commits and paths mean
// nothing here: a list that needs them (condition AND) never applies, and
// otherwise they are ignored.
func (r *rule) allowed(text string, ms, me int, secret string) bool {
	for _, a := range r.allow {
		if a.And && a.CommitsOrPaths {
			continue
		}
		target := secret
		switch a.Target {
		case "match":
			target = text[ms:me]
		case "line":
			ls := strings.LastIndexByte(text[:ms], '\n') + 1
			le := strings.IndexByte(text[me:], '\n')
			if le < 0 {
				le = len(text)
			} else {
				le += me
			}
			target = text[ls:le]
		}
		regex := a.re != nil && target != "" && a.re.MatchString(target)
		stop := a.stop != nil && a.stop.MatchFirstString(strings.ToLower(secret)) != nil
		if a.And {
			if (a.re == nil || regex) && (a.stop == nil || stop) && (a.re != nil || a.stop != nil) {
				return true
			}
		} else if regex || stop {
			return true
		}
	}
	return false
}

// gitleaksJSON is the part of gitleaks's default rule set that finds
// secrets in text, as gitleaks's config code translates it (its rules
// with a regex, not of paths, not parts of composite rules). It is a
// snapshot rather than gitleaks's config package at run time: that package
// and viper, which reads its TOML, bring yaml, dotenv, go-version and
// zerolog, whose package initialisation every trove process paid for,
// redacting or not. TestGitleaksSnapshot holds it to the gitleaks of
// go.mod (`go test ./redact -run TestGitleaksSnapshot -update` writes it).
//
//go:embed gitleaks.json
var gitleaksJSON []byte

// snapshot is gitleaksJSON's form.
type snapshot struct {
	Rules  []snapRule   `json:"rules"`
	Global []*allowlist `json:"global"` // the allowlists of every rule
}

type snapRule struct {
	ID          string       `json:"id"`
	Regex       string       `json:"regex"`
	SecretGroup int          `json:"secretGroup,omitempty"`
	Entropy     float64      `json:"entropy,omitempty"`
	Keywords    []string     `json:"keywords,omitempty"`
	Allow       []*allowlist `json:"allow,omitempty"`
}

// allowlist is one of gitleaks's allowlists: its regexes joined into one
// as gitleaks joins them ("(?:a|b)"), its stop words lower-cased.
type allowlist struct {
	And            bool     `json:"and,omitempty"`
	CommitsOrPaths bool     `json:"commitsOrPaths,omitempty"`
	Target         string   `json:"target,omitempty"`
	Regex          string   `json:"regex,omitempty"`
	StopWords      []string `json:"stopWords,omitempty"`

	re   *regexp.Regexp
	stop *ahocorasick.Trie
}

// compile readies a for matching.
func (a *allowlist) compile() error {
	if a.Regex != "" {
		re, err := regexp.Compile(a.Regex)
		if err != nil {
			return err
		}
		a.re = re
	}
	if len(a.StopWords) > 0 {
		a.stop = ahocorasick.NewTrieBuilder().AddStrings(a.StopWords).Build()
	}
	return nil
}

// gitleaksRules compiles the snapshot of gitleaks's default rules.
func gitleaksRules() ([]*rule, error) {
	var snap snapshot
	if err := json.Unmarshal(gitleaksJSON, &snap); err != nil {
		return nil, fmt.Errorf("redact: gitleaks rules: %w", err)
	}
	for _, a := range snap.Global {
		if err := a.compile(); err != nil {
			return nil, fmt.Errorf("redact: gitleaks rules: global allowlist: %w", err)
		}
	}
	var out []*rule
	for _, gr := range snap.Rules {
		re, err := regexp.Compile(gr.Regex)
		if err != nil {
			return nil, fmt.Errorf("redact: gitleaks rules: %s: %w", gr.ID, err)
		}
		r := &rule{id: gr.ID, re: re, group: gr.SecretGroup, entropy: gr.Entropy, prio: prioFormat}
		for _, k := range gr.Keywords {
			r.keywords = append(r.keywords, strings.ToLower(k))
		}
		for _, a := range gr.Allow {
			if err := a.compile(); err != nil {
				return nil, fmt.Errorf("redact: gitleaks rules: %s: allowlist: %w", gr.ID, err)
			}
		}
		r.allow = append(append(r.allow, gr.Allow...), snap.Global...)
		if strings.HasPrefix(gr.ID, "generic") {
			// A UUID after a name with "key" in it is an idempotency or
			// object key far more often than a secret; a UUID after a
			// secret's name is still found by env-secret and
			// password-assignment.
			r.prio, r.digit = prioGeneric, true
			r.keep = func(_, s string) bool { return !uuidRe().MatchString(s) }
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("redact: gitleaks rules: none loaded")
	}
	return out, nil
}

var uuidRe = lazyRegexp(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
