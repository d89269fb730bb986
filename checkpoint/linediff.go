package checkpoint

import (
	"bytes"
	"strings"
	"unsafe"
)

// diffBudget bounds the work of one line diff (compared line pairs). Past it
// the changed middle of the two files counts as wholly replaced: an upper
// bound on the true numbers, never an undercount. Common leading and trailing
// lines are always matched first, so typical edits of huge files stay exact.
const diffBudget = 50_000_000

// binarySniff is how much of a file is searched for a NUL byte, as git does.
const binarySniff = 8000

// isBinary reports whether data looks binary: a NUL byte near its start.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

// countLines counts the lines of data; a last line without "\n" counts.
func countLines(data []byte) int {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// splitLines splits data into lines that keep their "\n", so "a" and "a\n"
// differ, as in git's numstat.
func splitLines(s string) []string {
	out := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n') + 1
		if i == 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// lineStats returns how many lines a minimal line diff from a to b deletes
// and inserts. Binary content (either side) is reported as binary with no
// line counts.
func lineStats(a, b []byte) (del, ins int, binary bool) {
	if isBinary(a) || isBinary(b) {
		return 0, 0, true
	}
	if bytes.Equal(a, b) {
		return 0, 0, false
	}
	// The lines share a's and b's bytes, which nothing writes meanwhile, and
	// none outlives the call: a copy of two whole files per changed file
	// was most of what a plan allocated after its walk.
	la, lb := splitLines(unsafe.String(unsafe.SliceData(a), len(a))), splitLines(unsafe.String(unsafe.SliceData(b), len(b)))
	// Trim the common prefix and suffix: cheap and usually most of a file.
	for len(la) > 0 && len(lb) > 0 && la[0] == lb[0] {
		la, lb = la[1:], lb[1:]
	}
	for len(la) > 0 && len(lb) > 0 && la[len(la)-1] == lb[len(lb)-1] {
		la, lb = la[:len(la)-1], lb[:len(lb)-1]
	}
	if len(la) == 0 || len(lb) == 0 {
		return len(la), len(lb), false
	}
	// Compare small integers instead of strings.
	ids := make(map[string]int32, len(la)+len(lb))
	intern := func(lines []string) []int32 {
		out := make([]int32, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d, ok := editDistance(intern(la), intern(lb), diffBudget)
	if !ok {
		return len(la), len(lb), false
	}
	n, m := len(la), len(lb)
	return (d + n - m) / 2, (d - n + m) / 2, false
}

// editDistance is the length of the shortest edit script (insertions plus
// deletions) turning a into b, by Myers' greedy O((N+M)D) algorithm. It
// gives up (ok false) once it has spent budget steps.
func editDistance(a, b []int32, budget int) (int, bool) {
	n, m := len(a), len(b)
	maxD := n + m
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	work := 0
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			x0 := x
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			work += x - x0
			v[off+k] = x
			if x >= n && y >= m {
				return d, true
			}
		}
		work += d + 1
		if work > budget {
			return 0, false
		}
	}
	return maxD, true
}
