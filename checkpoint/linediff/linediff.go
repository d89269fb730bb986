// Package linediff is the one line diff of trove: checkpoints count with it
// (the insertions and deletions of a rewind or diff report, as git's
// --numstat --minimal counts them) and the viewer shows its lines. It is
// Myers' O((N+M)D) algorithm over interned lines, after trimming the lines
// both ends share, with a bound on its work.
//
// Imports: the standard library.
package linediff

import (
	"bytes"
	"slices"
	"strings"
	"unsafe"
)

// Budget bounds the work of one Stats (compared line pairs). Past it the
// changed middle of the two files counts as wholly replaced: an upper bound
// on the true numbers, never an undercount. Common leading and trailing
// lines are always matched first, so typical edits of huge files stay exact.
const Budget = 50_000_000

// binarySniff is how much of a file is searched for a NUL byte, as git does.
const binarySniff = 8000

// IsBinary reports whether data looks binary: a NUL byte near its start.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

// CountLines counts the lines of data; a last line without "\n" counts.
func CountLines(data []byte) int {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// Split splits s into lines that keep their "\n", so "a" and "a\n" differ,
// as in git's numstat.
func Split(s string) []string { return appendLines(nil, s) }

// appendLines appends the lines of s (see Split) to out.
func appendLines(out []string, s string) []string {
	out = slices.Grow(out, strings.Count(s, "\n")+1)
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

// Stats returns how many lines a minimal line diff from a to b deletes and
// inserts. Binary content (either side) is reported as binary with no line
// counts.
func Stats(a, b []byte) (del, ins int, binary bool) {
	var s Scratch
	return s.Stats(a, b)
}

// Scratch is the memory of Stats, kept from one call to the next: a
// caller counting the lines of many files (a checkpoint plan) keeps one per
// goroutine, and its lines, their numbers and the map interning them are
// allocated for the first file only, where each call made them afresh (the
// largest part of a plan's new memory after its walk, each page of it a
// page fault in a short process). The zero Scratch is ready; it is not
// safe for concurrent use.
type Scratch struct {
	la, lb []string
	ia, ib []int32
	v      []int32
	ids    map[string]int32
}

// scratchMax is the most lines a Scratch keeps its memory for: one huge
// file would leave every later call clearing a huge map.
const scratchMax = 1 << 16

// Stats is the package's Stats with s's memory.
func (s *Scratch) Stats(a, b []byte) (del, ins int, binary bool) {
	if IsBinary(a) || IsBinary(b) {
		return 0, 0, true
	}
	if bytes.Equal(a, b) {
		return 0, 0, false
	}
	// The lines both files share at either end are never split: an edit
	// changes a few lines of a file, and splitting all of it was most of
	// the work.
	a, b = trimBytes(a, b)
	// The lines share a's and b's bytes, which nothing writes meanwhile, and
	// none outlives the call (release drops them from s): a copy of two
	// whole files per changed file was most of what a checkpoint plan
	// allocated after its walk.
	s.la = appendLines(s.la[:0], unsafe.String(unsafe.SliceData(a), len(a)))
	s.lb = appendLines(s.lb[:0], unsafe.String(unsafe.SliceData(b), len(b)))
	defer s.release()
	_, la, lb := trim(s.la, s.lb)
	n, m := len(la), len(lb)
	if n == 0 || m == 0 {
		return n, m, false
	}
	s.v = slices.Grow(s.v[:0], 2*(n+m)+3)
	// A few changed lines take a few rounds, comparing the lines as they
	// are: numbering every line first (a map of them all) cost more than
	// the rounds. Past quickWork steps a line, the lines are numbered and
	// the diff starts again, with the whole budget: the same numbers.
	quick := min(Budget, quickWork*(n+m))
	d, _, ok := myers(la, lb, quick, false, s.v[:cap(s.v)])
	if !ok && quick < Budget {
		if s.ids == nil {
			s.ids = make(map[string]int32, n+m)
		}
		s.ia, s.ib = s.intern(s.ia[:0], la), s.intern(s.ib[:0], lb)
		d, _, ok = myers(s.ia, s.ib, Budget, false, s.v[:cap(s.v)])
	}
	if !ok {
		return n, m, false
	}
	return (d + n - m) / 2, (d - n + m) / 2, false
}

// quickWork is the work a line of both sides may cost a diff of the lines
// as they are, before they are numbered.
const quickWork = 16

// trimBytes takes off the whole lines a and b share at their start and at
// their end, as trim does once they are split (it may leave some of the
// end's for trim).
func trimBytes(a, b []byte) ([]byte, []byte) {
	i := commonPrefix(a, b)
	// The lines before the one that differs; at the end of either, its
	// last line differs from the other's too (shorter, or without "\n").
	p := bytes.LastIndexByte(a[:i], '\n') + 1
	a, b = a[p:], b[p:]
	j := commonSuffix(a, b)
	// The lines that start after a "\n" of the bytes both end with.
	if k := bytes.IndexByte(a[len(a)-j:], '\n'); k >= 0 {
		tail := j - k - 1
		a, b = a[:len(a)-tail], b[:len(b)-tail]
	}
	return a, b
}

// chunk is how many bytes commonPrefix and commonSuffix compare at once.
const chunk = 64

// commonPrefix is the length of the bytes a and b start with alike.
func commonPrefix(a, b []byte) int {
	i, n := 0, min(len(a), len(b))
	for i+chunk <= n && bytes.Equal(a[i:i+chunk], b[i:i+chunk]) {
		i += chunk
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// commonSuffix is the length of the bytes a and b end with alike.
func commonSuffix(a, b []byte) int {
	j, n := 0, min(len(a), len(b))
	for j+chunk <= n && bytes.Equal(a[len(a)-j-chunk:len(a)-j], b[len(b)-j-chunk:len(b)-j]) {
		j += chunk
	}
	for j < n && a[len(a)-1-j] == b[len(b)-1-j] {
		j++
	}
	return j
}

// intern appends the numbers of lines to out, numbering lines not seen
// yet in s.ids.
func (s *Scratch) intern(out []int32, lines []string) []int32 {
	for _, l := range lines {
		id, ok := s.ids[l]
		if !ok {
			id = int32(len(s.ids))
			s.ids[l] = id
		}
		out = append(out, id)
	}
	return out
}

// release drops what s holds of the files (the lines point into them),
// and all of its memory past scratchMax lines.
func (s *Scratch) release() {
	if len(s.la)+len(s.lb) > scratchMax {
		*s = Scratch{}
		return
	}
	clear(s.la)
	clear(s.lb)
	clear(s.ids)
}

// Op says what a line of a diff is: its mark in a unified diff.
type Op string

const (
	Equal  Op = " "
	Delete Op = "-"
	Insert Op = "+"
)

// Line is one line of a diff, without its "\n".
type Line struct {
	Op   Op
	Text string
}

// Lines is a minimal line diff turning a into b: every line of a and of b
// once, in order, equal lines shared. ok is false when it would take more
// than budget steps (compared line pairs); its memory grows with the
// square of the number of changed lines, which the budget bounds.
func Lines(a, b string, budget int) (lines []Line, ok bool) {
	la, lb := Split(a), Split(b)
	head, ma, mb := trim(la, lb)
	out := make([]Line, 0, len(la)+len(mb))
	for _, l := range la[:head] {
		out = append(out, Line{Equal, strings.TrimSuffix(l, "\n")})
	}
	if len(ma) > 0 && len(mb) > 0 {
		s := Scratch{ids: make(map[string]int32, len(ma)+len(mb))}
		ia, ib := s.intern(nil, ma), s.intern(nil, mb)
		_, trace, ok := myers(ia, ib, budget, true, nil)
		if !ok {
			return nil, false
		}
		out = script(out, ma, mb, trace)
	} else {
		for _, l := range ma {
			out = append(out, Line{Delete, strings.TrimSuffix(l, "\n")})
		}
		for _, l := range mb {
			out = append(out, Line{Insert, strings.TrimSuffix(l, "\n")})
		}
	}
	for _, l := range la[head+len(ma):] {
		out = append(out, Line{Equal, strings.TrimSuffix(l, "\n")})
	}
	return out, true
}

// trim takes off the lines a and b share at both ends: how many at the
// head, and the differing middles.
func trim(a, b []string) (int, []string, []string) {
	head := 0
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b, head = a[1:], b[1:], head+1
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	return head, a, b
}

// myers is the length of the shortest edit script (insertions plus
// deletions) turning a into b, by Myers' greedy algorithm. It gives up (ok
// false) once it has spent budget steps. With keep, trace holds the
// furthest x of each diagonal k (at index k+d) after each round d, for
// script to walk back.
//
// v, when long enough, is the memory of the furthest x of each diagonal,
// whatever it holds.
func myers[T comparable](a, b []T, budget int, keep bool, v []int32) (d int, trace [][]int32, ok bool) {
	n, m := len(a), len(b)
	maxD := n + m
	off := maxD + 1
	if len(v) < 2*maxD+3 {
		v = make([]int32, 2*maxD+3)
	}
	// Round 0 reads diagonal 1 before any round wrote it; every later
	// read is of a diagonal the round before wrote.
	v[off+1] = 0
	work := 0
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1]) // down: an insertion
			} else {
				x = int(v[off+k-1]) + 1 // right: a deletion
			}
			y := x - k
			x0 := x
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			work += x - x0
			v[off+k] = int32(x)
			if x >= n && y >= m {
				if keep {
					trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
				}
				return d, trace, true
			}
		}
		if keep {
			trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
		}
		work += d + 1
		if work > budget {
			return 0, nil, false
		}
	}
	return maxD, trace, true
}

// script appends to out the lines of the edit script myers traced, walking
// back from the end of both.
func script(out []Line, a, b []string, trace [][]int32) []Line {
	var rev []Line
	x, y := len(a), len(b)
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // the x of diagonal k at index k+d-1
		k := x - y
		pk := k - 1 // came right: a line of a deleted
		if k == -d || (k != d && prev[k-1+d-1] < prev[k+1+d-1]) {
			pk = k + 1 // came down: a line of b inserted
		}
		px := int(prev[pk+d-1])
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, Line{Equal, strings.TrimSuffix(a[x], "\n")})
		}
		if x == px {
			y--
			rev = append(rev, Line{Insert, strings.TrimSuffix(b[y], "\n")})
		} else {
			x--
			rev = append(rev, Line{Delete, strings.TrimSuffix(a[x], "\n")})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, Line{Equal, strings.TrimSuffix(a[x], "\n")})
	}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}
