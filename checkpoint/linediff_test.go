package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLineStats(t *testing.T) {
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
		del, ins, bin := lineStats([]byte(c.a), []byte(c.b))
		if del != c.del || ins != c.ins || bin != c.binary {
			t.Errorf("lineStats(%q, %q) = -%d +%d bin %v, want -%d +%d bin %v", c.a, c.b, del, ins, bin, c.del, c.ins, c.binary)
		}
	}
	if n := countLines([]byte("a\nb")); n != 2 {
		t.Errorf("countLines = %d, want 2", n)
	}
}

// TestLineStatsBudget: past the work bound the changed middle counts as
// replaced, an upper bound, never less than the true numbers.
func TestLineStatsBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	a, b := randomLines(rng, 300), randomLines(rng, 300)
	la, lb := splitLines(a), splitLines(b)
	ia, ib := internAll(la, lb)
	d, ok := editDistance(ia, ib, 1<<40)
	if !ok {
		t.Fatal("unbounded diff gave up")
	}
	if _, ok := editDistance(ia, ib, 10); ok {
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

func internAll(a, b []string) ([]int32, []int32) {
	ids := map[string]int32{}
	f := func(ls []string) []int32 {
		out := make([]int32, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	return f(a), f(b)
}

func randomLines(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "line %d\n", rng.IntN(12))
	}
	return b.String()
}

// TestLineStatsMatchesGit compares with git diff --numstat --minimal, which
// also counts a minimal line diff.
func TestLineStatsMatchesGit(t *testing.T) {
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
		del, ins, _ := lineStats([]byte(a), []byte(b))
		if del != gd || ins != gi {
			t.Errorf("case %d: -%d +%d, git says -%d +%d\na=%q\nb=%q", i, del, ins, gd, gi, a, b)
		}
	}
}

func mutate(rng *rand.Rand, s string) string {
	lines := splitLines(s)
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
