package redact

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
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
	allow []*config.Allowlist
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
// match [ms, me). Commits and paths mean nothing here: a list that needs
// them (condition AND) never applies, and otherwise they are ignored.
func (r *rule) allowed(text string, ms, me int, secret string) bool {
	for _, a := range r.allow {
		if a.MatchCondition == config.AllowlistMatchAnd && (len(a.Commits) > 0 || len(a.Paths) > 0) {
			continue
		}
		target := secret
		switch a.RegexTarget {
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
		regex := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		if a.MatchCondition == config.AllowlistMatchAnd {
			if (len(a.Regexes) == 0 || regex) && (len(a.StopWords) == 0 || stop) && (len(a.Regexes) > 0 || len(a.StopWords) > 0) {
				return true
			}
		} else if regex || stop {
			return true
		}
	}
	return false
}

// gitleaksRules loads the rule set gitleaks ships as its default config,
// through gitleaks's own config code (viper reads the TOML).
func gitleaksRules() ([]*rule, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("redact: gitleaks rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("redact: gitleaks rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("redact: gitleaks rules: %w", err)
	}
	var out []*rule
	for _, id := range cfg.OrderedRules {
		gr := cfg.Rules[id]
		// Rules of file names or for files of one kind (Terraform), and
		// parts of composite rules, find nothing in a transcript.
		if gr.Regex == nil || gr.Path != nil || gr.SkipReport {
			continue
		}
		r := &rule{id: gr.RuleID, re: gr.Regex, group: gr.SecretGroup, entropy: gr.Entropy, prio: prioFormat}
		for _, k := range gr.Keywords {
			r.keywords = append(r.keywords, strings.ToLower(k))
		}
		r.allow = append(append(r.allow, gr.Allowlists...), cfg.Allowlists...)
		if strings.HasPrefix(gr.RuleID, "generic") {
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
