package redact

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

var update = flag.Bool("update", false, "write gitleaks.json from the gitleaks of go.mod")

// TestGitleaksSnapshot holds gitleaks.json to what gitleaks's own config
// code makes of its default rule set: after a bump of gitleaks, run it
// with -update.
func TestGitleaksSnapshot(t *testing.T) {
	snap := snapshotOfGitleaks(t)
	b, err := json.MarshalIndent(snap, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile("gitleaks.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(b, gitleaksJSON) {
		t.Fatalf("gitleaks.json is not gitleaks's rule set of go.mod (%d bytes, want %d): go test ./redact -run TestGitleaksSnapshot -update", len(gitleaksJSON), len(b))
	}
	if len(snap.Rules) < 150 {
		t.Errorf("%d gitleaks rules, want the whole default set", len(snap.Rules))
	}
}

// gitleaksConfig loads gitleaks's default config through its own code
// (viper reads the TOML, Translate compiles and validates it).
func gitleaksConfig(t *testing.T) config.Config {
	t.Helper()
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		t.Fatal(err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		t.Fatal(err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// snapshotOfGitleaks is the snapshot of gitleaks's default config.
func snapshotOfGitleaks(t *testing.T) snapshot {
	t.Helper()
	cfg := gitleaksConfig(t)
	var snap snapshot
	for _, a := range cfg.Allowlists {
		snap.Global = append(snap.Global, allowlistOf(a))
	}
	for _, id := range cfg.OrderedRules {
		gr := cfg.Rules[id]
		// Rules of file names or for files of one kind (Terraform), and
		// parts of composite rules, find nothing in a transcript.
		if gr.Regex == nil || gr.Path != nil || gr.SkipReport {
			continue
		}
		r := snapRule{ID: gr.RuleID, Regex: gr.Regex.String(), SecretGroup: gr.SecretGroup, Entropy: gr.Entropy, Keywords: gr.Keywords}
		for _, a := range gr.Allowlists {
			r.Allow = append(r.Allow, allowlistOf(a))
		}
		snap.Rules = append(snap.Rules, r)
	}
	return snap
}

// allowlistOf is a as gitleaks matches with it once validated: its
// regexes joined as its joinRegexOr joins them, its stop words lower-cased
// and unique (sorted here: gitleaks keeps them in map order, and only
// whether one is in the secret matters).
func allowlistOf(a *config.Allowlist) *allowlist {
	out := &allowlist{
		And:            a.MatchCondition == config.AllowlistMatchAnd,
		CommitsOrPaths: len(a.Commits) > 0 || len(a.Paths) > 0,
		Target:         a.RegexTarget,
	}
	if len(a.Regexes) > 0 {
		parts := make([]string, len(a.Regexes))
		for i, re := range a.Regexes {
			parts[i] = re.String()
		}
		out.Regex = "(?:" + strings.Join(parts, "|") + ")"
	}
	for _, w := range a.StopWords {
		out.StopWords = append(out.StopWords, strings.ToLower(w))
	}
	slices.Sort(out.StopWords)
	out.StopWords = slices.Compact(out.StopWords)
	return out
}

// The snapshot's allowlists answer as gitleaks's own: for every rule's
// lists and the global ones, on the secrets, matches and lines of the
// corpora and on each list's own stop words.
func TestSnapshotAllowlistsAsGitleaks(t *testing.T) {
	cfg := gitleaksConfig(t)
	var lists []*config.Allowlist
	lists = append(lists, cfg.Allowlists...)
	for _, id := range cfg.OrderedRules {
		lists = append(lists, cfg.Rules[id].Allowlists...)
	}
	inputs := []string{"EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "ghp_000000000000000000000000000000000000", "${API_KEY}", "xxxxxxxxxxxxxxxx", "12345678-1234-1234-1234-123456789abc"}
	for _, a := range lists {
		inputs = append(inputs, a.StopWords...)
		for _, w := range a.StopWords {
			inputs = append(inputs, "x"+strings.ToUpper(w)+"9")
		}
	}
	checked, allowed := 0, 0
	for _, a := range lists {
		mine := allowlistOf(a)
		if err := mine.compile(); err != nil {
			t.Fatal(err)
		}
		for _, s := range inputs {
			wantStop, _ := a.ContainsStopWord(s)
			gotStop := mine.stop != nil && mine.stop.MatchFirstString(strings.ToLower(s)) != nil
			wantRe := a.RegexAllowed(s)
			gotRe := mine.re != nil && s != "" && mine.re.MatchString(s)
			if gotStop != wantStop || gotRe != wantRe {
				t.Fatalf("allowlist %q on %q: stop %v regex %v, gitleaks says %v %v", a.Description, s, gotStop, gotRe, wantStop, wantRe)
			}
			checked++
			if gotStop || gotRe {
				allowed++
			}
		}
	}
	if checked == 0 || allowed == 0 {
		t.Fatalf("%d answers checked, %d of them allowing: the inputs test nothing", checked, allowed)
	}
}
