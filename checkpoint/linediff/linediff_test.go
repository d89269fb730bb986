package linediff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestStats(t *testing.T) {
	cases := []struct {
		a, b     string
		del, ins int
		binary   bool
	}{
		{"", "", 0, 0, false},
		{"a\n", "a\n", 0, 0, false},
		{"", "a\nb\n", 0, 2, false},
		{"a\nb\n", "", 2, 0, false},
		{"a\nb\nc\n", "a\nc\n", 1, 0, false},
		{"a\nb\nc\n", "a\nB\nc\n", 1, 1, false},
		{"a\nb", "a\nb\n", 1, 1, false}, // the newline at the end is a change
		{"x\ny\nz\n", "z\ny\nx\n", 2, 2, false},
		{"a\x00b", "a\x00c", 0, 0, true},
		{"text\n", "\x00bin", 0, 0, true},
	}
	for _, c := range cases {
		del, ins, bin := Stats([]byte(c.a), []byte(c.b))
		if del != c.del || ins != c.ins || bin != c.binary {
			t.Errorf("Stats(%q, %q) = -%d +%d bin %v, want -%d +%d bin %v", c.a, c.b, del, ins, bin, c.del, c.ins, c.binary)
		}
	}
	if n := CountLines([]byte("a\nb")); n != 2 {
		t.Errorf("countLines = %d, want 2", n)
	}
}

// TestStatsBudget: past the work bound the changed middle counts as
// replaced, an upper bound, never less than the true numbers.
func TestStatsBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	a, b := randomLines(rng, 300), randomLines(rng, 300)
	la, lb := Split(a), Split(b)
	s := Scratch{ids: map[string]int32{}}
	ia, ib := s.intern(nil, la), s.intern(nil, lb)
	d, _, ok := myers(ia, ib, 1<<40, false, nil)
	if !ok {
		t.Fatal("unbounded diff gave up")
	}
	if _, _, ok := myers(ia, ib, 10, false, nil); ok {
		t.Fatal("a budget of 10 steps was not enforced")
	}
	if d > len(la)+len(lb) || d < abs(len(la)-len(lb)) {
		t.Fatalf("edit distance %d out of bounds", d)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func randomLines(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "line %d\n", rng.IntN(12))
	}
	return b.String()
}

// TestStatsMatchesGit compares with git diff --numstat --minimal, which
// also counts a minimal line diff.
func TestStatsMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 40 {
		a := randomLines(rng, rng.IntN(60))
		b := mutate(rng, a)
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		if err := os.WriteFile(pa, []byte(a), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pb, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command("git", "diff", "--no-index", "--numstat", "--minimal", pa, pb).Output()
		var gi, gd int
		if len(out) > 0 {
			if _, err := fmt.Sscanf(string(out), "%d\t%d", &gi, &gd); err != nil {
				t.Fatalf("git numstat %q: %v", out, err)
			}
		}
		del, ins, _ := Stats([]byte(a), []byte(b))
		if del != gd || ins != gi {
			t.Errorf("case %d: -%d +%d, git says -%d +%d\na=%q\nb=%q", i, del, ins, gd, gi, a, b)
		}
	}
}

func mutate(rng *rand.Rand, s string) string {
	lines := Split(s)
	for range rng.IntN(8) {
		switch i := rng.IntN(max(1, len(lines))); rng.IntN(3) {
		case 0:
			lines = append(lines[:i], append([]string{fmt.Sprintf("new %d\n", rng.IntN(5))}, lines[i:]...)...)
		case 1:
			if len(lines) > 0 {
				lines = append(lines[:i], lines[i+1:]...)
			}
		case 2:
			if len(lines) > 0 {
				lines[i] = fmt.Sprintf("changed %d\n", rng.IntN(5))
			}
		}
	}
	return strings.Join(lines, "")
}

// TestLines: the script holds every line of a and of b once, in order, and
// is minimal (as many deletions and insertions as Stats counts).
func TestLines(t *testing.T) {
	got, ok := Lines("a\nb\nc\n", "a\nc\nd", Budget)
	var ops []string
	for _, l := range got {
		ops = append(ops, string(l.Op)+l.Text)
	}
	if want := " a|-b| c|+d"; !ok || strings.Join(ops, "|") != want {
		t.Errorf("Lines = %q (ok %v), want %q", strings.Join(ops, "|"), ok, want)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		a := randomLines(rng, rng.IntN(40))
		b := mutate(rng, a)
		if i%3 == 0 {
			b = randomLines(rng, rng.IntN(40))
		}
		lines, ok := Lines(a, b, Budget)
		if !ok {
			t.Fatalf("case %d gave up", i)
		}
		var ra, rb []string
		del, ins := 0, 0
		for _, l := range lines {
			if l.Op != Insert {
				ra = append(ra, l.Text)
			}
			if l.Op != Delete {
				rb = append(rb, l.Text)
			}
			switch l.Op {
			case Delete:
				del++
			case Insert:
				ins++
			}
		}
		trimmed := func(s string) string {
			var out []string
			for _, l := range Split(s) {
				out = append(out, strings.TrimSuffix(l, "\n"))
			}
			return strings.Join(out, "|")
		}
		if strings.Join(ra, "|") != trimmed(a) || strings.Join(rb, "|") != trimmed(b) {
			t.Fatalf("case %d: the script does not give back both sides\na=%q\nb=%q\n%v", i, a, b, lines)
		}
		if sd, si, _ := Stats([]byte(a), []byte(b)); sd != del || si != ins {
			t.Errorf("case %d: script -%d +%d, Stats -%d +%d", i, del, ins, sd, si)
		}
	}
	if _, ok := Lines(randomLines(rng, 300), randomLines(rng, 300), 100); ok {
		t.Error("a budget of 100 steps was not enforced")
	}
}

// A Scratch used for many pairs in turn, big and small, counts each as a
// diff from nothing does (Lines, whose script is checked against git),
// whatever the pairs before it left in its memory.
func TestScratchReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s Scratch
	for i := range 60 {
		n := 1 + rng.IntN(200)
		if i%20 == 7 {
			n = scratchMax + 10 // past what a Scratch keeps
		}
		a := randomLines(rng, n)
		b := mutate(rng, a)
		if i%10 == 3 {
			b = "\x00" + b
		}
		del, ins, bin := s.Stats([]byte(a), []byte(b))
		fresh := Scratch{}
		if d2, i2, b2 := fresh.Stats([]byte(a), []byte(b)); d2 != del || i2 != ins || b2 != bin {
			t.Fatalf("pair %d: reused -%d +%d bin %v, fresh -%d +%d bin %v", i, del, ins, bin, d2, i2, b2)
		}
		if bin {
			if !strings.HasPrefix(b, "\x00") {
				t.Fatalf("pair %d: text reported binary", i)
			}
			continue
		}
		lines, ok := Lines(a, b, 1<<40)
		if !ok {
			t.Fatalf("pair %d: Lines gave up", i)
		}
		wd, wi := counts(lines)
		if del != wd || ins != wi {
			t.Fatalf("pair %d (%d lines): Stats -%d +%d, Lines -%d +%d", i, n, del, ins, wd, wi)
		}
	}
}

// TestStatsAsLines: Stats, which leaves the lines both files share at
// either end unsplit and diffs the rest before numbering its lines,
// counts what Lines does (both ends trimmed as lines, lines numbered):
// edits at either end, files without a last "\n", one file the start or
// end of the other, lines that end alike, and diffs long enough to be
// numbered after all.
func TestStatsAsLines(t *testing.T) {
	pairs := [][2]string{
		{"a\nb\nc\n", "x\nb\nc\n"},
		{"a\nb\nc\n", "a\nb\nx\n"},
		{"a\nb\nc", "a\nb\nc\n"},
		{"a\nb\nc\n", "a\nb\nc"},
		{"a\nb\n", "a\nb\nc\n"},
		{"b\nc\n", "a\nb\nc\n"},
		{"a\nb", "a\nbc"},
		{"ab\nc\n", "b\nc\n"},
		{"x\nab\n", "x\nb\n"},
		{"a\nb\nb\n", "a\nb\n"},
		{"\n\n\n", "\n\n"},
		{"a", "b"},
		{"a\n", ""},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		a := randomLines(rng, rng.IntN(120))
		pairs = append(pairs, [2]string{a, mutate(rng, a)}, [2]string{a, strings.TrimSuffix(mutate(rng, a), "\n")})
	}
	for range 5 {
		// Unrelated files: past the diff of the lines as they are.
		pairs = append(pairs, [2]string{randomLines(rng, 400), randomLines(rng, 400)})
	}
	var s Scratch
	for _, p := range pairs {
		lines, ok := Lines(p[0], p[1], 1<<40)
		if !ok {
			t.Fatalf("Lines(%q, %q) gave up", p[0], p[1])
		}
		wd, wi := counts(lines)
		if del, ins, _ := s.Stats([]byte(p[0]), []byte(p[1])); del != wd || ins != wi {
			t.Errorf("Stats(%q, %q) = -%d +%d, Lines -%d +%d", p[0], p[1], del, ins, wd, wi)
		}
	}
}

// counts is how many lines a script deletes and inserts.
func counts(lines []Line) (del, ins int) {
	for _, l := range lines {
		switch l.Op {
		case Delete:
			del++
		case Insert:
			ins++
		}
	}
	return del, ins
}
