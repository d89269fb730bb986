package session

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// The listing index reads back what it wrote, strings with escapes and
// numbers of every sign and size included.
func TestIndexRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "plain", "quote \" and \\ back", "tab\tnew\nline", "ünïcode ✓", "\u2028", "<b>&amp;</b>"}
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return -r.Int64N(1 << 62)
		default:
			return r.Int64N(1 << 62)
		}
	}
	idx := &dirIndex{dirMod: num(), open: []string{"a.jsonl"}, recs: map[string]*idxRec{}}
	for i := range 200 {
		base := fmt.Sprintf("2026-01-01T00-00-00-000Z_%04d.jsonl", i)
		pick := func() string { return strs[r.IntN(len(strs))] }
		idx.recs[base] = &idxRec{base: base, size: num(), mod: num(), side: num(), skip: r.IntN(2) == 0, meta: Metadata{
			ID: fmt.Sprint("id", i), Cwd: "/w " + pick(), Title: pick(), Model: pick(),
			CreatedAt: time.Unix(0, r.Int64N(1<<62)).UTC(), UpdatedAt: time.Unix(0, r.Int64N(1<<62)).UTC(),
			MessageCount: r.IntN(1 << 30), TurnCount: r.IntN(100), InputTokens: num(), OutputTokens: num(), TotalTokens: num(),
			CostUSD: r.Float64() * 100, ExitReason: pick(), ParentID: pick(), AgentName: pick(), FirstMessage: pick(),
		}}
		idx.recs[base].meta.FileSize = idx.recs[base].size // a record's metadata counts its file at its size
	}
	got := &dirIndex{recs: map[string]*idxRec{}}
	if err := decodeIndex(encodeIndex(idx), got); err != nil {
		t.Fatal(err)
	}
	if got.dirMod != idx.dirMod || !reflect.DeepEqual(got.open, idx.open) || len(got.recs) != len(idx.recs) {
		t.Fatalf("header or count differs: %d %v %d", got.dirMod, got.open, len(got.recs))
	}
	for base, want := range idx.recs {
		g := got.recs[base]
		g.meta.Path, g.meta.ProjectHash = want.meta.Path, want.meta.ProjectHash
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", base, g, want)
		}
	}
}

// A damaged index is an error, never a panic or a record of garbage.
func FuzzDecodeIndex(f *testing.F) {
	idx := &dirIndex{recs: map[string]*idxRec{"a.jsonl": {base: "a.jsonl", size: 3, meta: Metadata{ID: "x", Title: "t\"q"}}}}
	f.Add(encodeIndex(idx))
	f.Add([]byte(`{"trove_index":1}` + "\n" + `["a.jsonl",1,2,3,0,"i","c","t","m",-1,1,2,3,4,5,6,0.5,"","","",""]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := &dirIndex{recs: map[string]*idxRec{}}
		if err := decodeIndex(data, got); err != nil {
			return
		}
		for base, r := range got.recs {
			if !validBase(base) || r.base != base {
				t.Fatalf("record %q of base %q", r.base, base)
			}
		}
	})
}

// Index numbers read by hand agree with strconv at the edges of int64.
func TestIndexIntEdges(t *testing.T) {
	for _, n := range []string{"0", "-0", "9223372036854775807", "-9223372036854775808", "1793491260000000000", "-1", "12"} {
		want, _ := strconv.ParseInt(n, 10, 64)
		d := idxDecoder{b: []byte(n + "]")}
		if got := d.int(); got != want || d.err != nil {
			t.Errorf("%s: %d, %v; want %d", n, got, d.err, want)
		}
	}
	for _, n := range []string{"9223372036854775808", "-9223372036854775809", "99999999999999999999", "1x", "-"} {
		d := idxDecoder{b: []byte(n + "]")}
		if d.int(); d.err == nil {
			t.Errorf("%s read without an error", n)
		}
	}
}
