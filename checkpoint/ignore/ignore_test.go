package ignore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestIgnoreRules(t *testing.T) {
	cases := []struct {
		pattern string
		path    string
		isDir   bool
		want    bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "deep/er/a.log", false, true},
		{"*.log", "a.log.txt", false, false},
		{"build/", "build", true, true},
		{"build/", "build", false, false}, // dir-only
		{"build/", "src/build", true, true},
		{"/build", "src/build", true, false}, // anchored
		{"/build", "build", false, true},
		{"doc/frotz", "doc/frotz", true, true},
		{"doc/frotz", "a/doc/frotz", true, false}, // a middle slash anchors
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo/bar", "x/foo/bar", false, true},
		{"abc/**", "abc/x", false, true},
		{"abc/**", "abc/x/y", false, true},
		{"abc/**", "abc", true, false},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/xb", false, false},
		{"foo*bar", "foo/bar", false, false}, // * never crosses /
		{"?.txt", "a.txt", false, true},
		{"?.txt", "ab.txt", false, false},
		{"[abc].go", "b.go", false, true},
		{"[!abc].go", "b.go", false, false},
		{"[!abc].go", "d.go", false, true},
		{"[a-c]x", "bx", false, true},
		{"[a-c]x", "dx", false, false},
		{`\#hash`, "#hash", false, true},
		{`\!bang`, "!bang", false, true},
		{"trailing   ", "trailing", false, true},
		{`space\ `, "space ", false, true},
		{"# comment", "# comment", false, false},
		{"", "x", false, false},
		{"[unclosed", "[unclosed", false, true},
		{"*.[oa]", "lib.a", false, true},
		{"**", "any/thing", false, true},
	}
	for _, c := range cases {
		r, ok := Compile("", c.pattern)
		got := ok && r.Matches(c.path, c.isDir)
		if got != c.want {
			t.Errorf("%q matches %q (dir %v) = %v, want %v", c.pattern, c.path, c.isDir, got, c.want)
		}
	}
}

func TestIgnoreNegationAndNesting(t *testing.T) {
	ig := &Matcher{}
	ig = ig.With(Parse("", []byte("*.log\n!keep.log\n# c\n\nsecret/\n")))
	sub := ig.With(Parse("src", []byte("!*.log\ngen\n")))
	cases := []struct {
		ig    *Matcher
		path  string
		isDir bool
		want  bool
	}{
		{ig, "a.log", false, true},
		{ig, "keep.log", false, false},
		{ig, "x/keep.log", false, false},
		{ig, "secret", true, true},
		{sub, "src/a.log", false, false}, // a deeper file re-includes
		{sub, "other/a.log", false, true},
		{sub, "src/gen", true, true},
		{sub, "gen", true, false}, // src/.gitignore does not apply above src
	}
	for _, c := range cases {
		if got := c.ig.Ignored(c.path, c.isDir); got != c.want {
			t.Errorf("ignored(%q) = %v, want %v", c.path, got, c.want)
		}
	}
	extra := &Matcher{rules: ig.rules}
	r, _ := Compile("", "keep.log")
	extra.extra = []Rule{r}
	if !extra.Ignored("keep.log", false) {
		t.Error("WithIgnore patterns must win over .gitignore negations")
	}
}

// TestIgnoreMatchesGit compares the matcher with git check-ignore on random
// patterns and paths.
func TestIgnoreMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, _ := cmd.Output()
		return string(out)
	}
	git("", "init", "-q")
	rng := rand.New(rand.NewPCG(1, 1))
	parts := []string{"a", "b", "ab", "x.go", "y.log", "build", "*", "**", "?", "[ab]", "[!a]", "*.go", "*.log", "a*", "[a-c]"}
	names := []string{"a", "b", "ab", "x.go", "y.log", "build", "c", "ba", "aa.go"}
	for round := range 60 {
		var pats []string
		for range 4 {
			n := 1 + rng.IntN(3)
			var elems []string
			for range n {
				elems = append(elems, parts[rng.IntN(len(parts))])
			}
			p := strings.Join(elems, "/")
			switch rng.IntN(5) {
			case 0:
				p = "/" + p
			case 1:
				p += "/"
			case 2:
				p = "!" + p
			}
			pats = append(pats, p)
		}
		text := strings.Join(pats, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var paths []string
		for range 40 {
			n := 1 + rng.IntN(3)
			var elems []string
			for range n {
				elems = append(elems, names[rng.IntN(len(names))])
			}
			paths = append(paths, strings.Join(elems, "/"))
		}
		// Files only (git check-ignore --no-index treats paths as files unless
		// they end in "/"); parents are checked as directories, as a walk does.
		out := git(strings.Join(paths, "\n")+"\n", "check-ignore", "--no-index", "--stdin", "-v", "-n")
		gitIgnored := map[string]bool{}
		for line := range strings.SplitSeq(out, "\n") {
			src, path, ok := strings.Cut(line, "\t")
			if !ok {
				continue
			}
			// "::" means no pattern matched; a "!" pattern means not ignored.
			if src != "::" && !strings.Contains(src, ":!") {
				gitIgnored[path] = true
			}
		}
		ig := (&Matcher{}).With(Parse("", []byte(text)))
		for _, p := range paths {
			got := walkIgnored(ig, p)
			if got != gitIgnored[p] {
				t.Errorf("round %d: .gitignore %q: %q ignored = %v, git says %v", round, text, p, got, gitIgnored[p])
			}
		}
	}
}

// walkIgnored is whether a walk would leave p out: p or a parent directory
// ignored.
func walkIgnored(ig *Matcher, p string) bool {
	for i := range len(p) {
		if p[i] == '/' && ig.Ignored(p[:i], true) {
			return true
		}
	}
	return ig.Ignored(p, false)
}

func TestGlobRegexpNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	alphabet := []byte(`ab*?[]!^-\/.`)
	for range 5000 {
		var b bytes.Buffer
		for range rng.IntN(10) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		r, ok := Compile("", b.String())
		if ok {
			_ = r.Matches("a/b.c", false)
		}
	}
	_ = fmt.Sprint()
}

// Without a negation the rules are matched by name and suffix at once; the
// answer is the one running them all in order gives, for every kind of rule.
func TestFastIgnoreRules(t *testing.T) {
	rootRules := "*.log\nbuild/\n/only-root.txt\ndocs/*.md\n**/gen/\n*.tmp/\nexact\n[ab]*.c\n"
	paths := []string{
		"a.log", "x/a.log", "build", "x/build", "only-root.txt", "x/only-root.txt",
		"docs/a.md", "x/docs/a.md", "gen", "x/gen", "y.tmp", "x/y.tmp", "exact", "x/exact",
		"a1.c", "c1.c", "node_modules", "x/node_modules", ".DS_Store", "x/.git", "x/y.pyc",
		"sub/keep.txt", "sub/local.txt", "sub/deep/local.txt", "local.txt", "x/local.txt", "plain.go", "x/plain.go",
	}
	for _, extra := range []string{"", "sub/*.txt", "!sub/keep.txt"} {
		base := New(CompilePatterns("", Defaults()), nil)
		ig := base.With(Parse("", []byte(rootRules)))
		ig = ig.With(Parse("sub", []byte("local.txt\n")))
		for _, p := range strings.Split(extra, "\n") {
			if r, ok := Compile("", p); ok {
				ig.extra = append(ig.extra, r)
			}
		}
		if (ig.fastRules() == nil) != strings.Contains(extra, "!") {
			t.Fatalf("extra %q: fast rules %v", extra, ig.fastRules() != nil)
		}
		for _, p := range paths {
			name := p[strings.LastIndexByte(p, '/')+1:]
			for _, dir := range []bool{false, true} {
				if got, want := ig.Ignored(p, dir), ig.inOrder(p, name, dir); got != want {
					t.Errorf("extra %q: ignored(%q, dir %v) = %v, in order %v", extra, p, dir, got, want)
				}
			}
		}
	}
}

// BenchmarkIgnored is the walk's check of one path against the default
// rules and a root .gitignore.
func BenchmarkIgnored(b *testing.B) {
	ig := New(CompilePatterns("", Defaults()), nil).With(Parse("", []byte("*.log\nbuild/\n/tmp\n")))
	paths := []string{"pkg03/sub05/leaf2/file0123.go", "pkg03/sub05/leaf2", "pkg03/sub05/leaf2/asset0124.bin", "README.md"}
	for i := 0; b.Loop(); i++ {
		ig.Ignored(paths[i%len(paths)], i%4 == 1)
	}
}

// Names are matched whatever byte they start with: the filter on first
// bytes passes every name a rule has, bytes past ASCII included.
func TestNameRulesFirstByte(t *testing.T) {
	ig := New(CompilePatterns("", []string{".git/", "x", "\u00e9t\u00e9", "*.o"}), nil)
	for p, want := range map[string]bool{
		"a/x": true, "x": true, "a/y": false, "a/.git": false, "a/\u00e9t\u00e9": true,
		"a/\u00e9": false, "b.o": true, "xx": false, "": false,
	} {
		if got := ig.Ignored(p, false); got != want {
			t.Errorf("Ignored(%q, file) = %v, want %v", p, got, want)
		}
	}
	if !ig.Ignored("a/.git", true) || ig.Ignored("a/.gitx", true) {
		t.Error(".git/ as a directory")
	}
}
