package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trovekit/trove/backend/mem"
)

func TestAbbrevResolvesEverySession(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	var ids []string
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for i := range 1000 {
		u, err := uuid.NewV7()
		if err != nil {
			t.Fatal(err)
		}
		id := u.String()
		ids = append(ids, id)
		name := SessionPath(fmt.Sprintf("/w/%d", i%7), now, id)
		if err := st.WriteFile(ctx, name, []byte(`{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-11-24T10:00:00.000Z","cwd":"/w"}`+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	s, err := OpenStore(ctx, st, WithInlineBlobs())
	if err != nil {
		t.Fatal(err)
	}
	ab := Abbrev(ids)
	longest := 0
	for i, id := range ids {
		a := ab[i]
		longest = max(longest, len(a))
		if len(a) < MinAbbrev {
			t.Fatalf("abbreviation %q of %s is shorter than %d", a, id, MinAbbrev)
		}
		name, err := s.Find(ctx, a)
		if err != nil || idFromName(name[len(name)-len(id)-len(".jsonl"):]) != id {
			t.Fatalf("Find(%q) = %q, %v; want %s", a, name, err, id)
		}
	}
	t.Logf("1,000 ids made in one minute: abbreviations of at most %d characters", longest)
	if longest > 8 {
		t.Errorf("abbreviations up to %d characters; random tails should need about 5", longest)
	}
	// Prefixes still work, and a shared prefix is ambiguous.
	if _, err := s.Find(ctx, ids[0][:30]); err != nil {
		t.Errorf("a long prefix: %v", err)
	}
	if _, err := s.Find(ctx, ids[0][:4]); err == nil {
		t.Error("a 4-character prefix shared by 1,000 sessions resolved")
	}
}

func TestMatchID(t *testing.T) {
	id := "01a20f2f-bab0-716b-b3d1-caaf28aaa3d6"
	for ref, want := range map[string]bool{"01a2": true, "a3d6": true, "aa3d6": true, "3d6": false, "": true, "x": false, id: true, "bab0": false} {
		if got := MatchID(id, ref); got != want {
			t.Errorf("MatchID(%q) = %v, want %v", ref, got, want)
		}
	}
}

// abbrevByCounting is the plain definition Abbrev must agree with: for
// each length from MinAbbrev, count every id's suffix and prefix.
func abbrevByCounting(ids []string) map[string]string {
	out := map[string]string{}
	maxLen := 0
	for _, id := range ids {
		maxLen = max(maxLen, len(id))
	}
	for n := MinAbbrev; n <= maxLen; n++ {
		suffixes, prefixes := map[string]int{}, map[string]int{}
		for _, id := range ids {
			if len(id) >= n {
				suffixes[id[len(id)-n:]]++
				prefixes[id[:n]]++
			}
		}
		for _, id := range ids {
			if _, ok := out[id]; ok || len(id) < n {
				continue
			}
			suf := id[len(id)-n:]
			others := prefixes[suf]
			if id[:n] == suf {
				others--
			}
			if suffixes[suf] == 1 && others == 0 && n < len(id) {
				out[id] = suf
			}
		}
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			out[id] = id
		}
	}
	return out
}

func TestAbbrevAgreesWithCounting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 4000 {
		// Short ids of a few letters, and long ones of two bytes (one a
		// NUL) that share tails past the 16 bytes compared as numbers.
		alphabet, long := "ab0-", 9
		if round%2 == 1 {
			alphabet, long = "a\x00", 24
		}
		var ids []string
		for range 1 + rng.IntN(12) {
			b := make([]byte, 1+rng.IntN(long))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			ids = append(ids, string(b))
		}
		if round%5 == 0 {
			ids = append(ids, ids[0]) // a duplicate
		}
		got, want := Abbrev(ids), abbrevByCounting(ids)
		for i, id := range ids {
			if got[i] != want[id] {
				t.Fatalf("ids %q: Abbrev(%q) = %q, want %q", ids, id, got[i], want[id])
			}
			// What it gives resolves to the id alone.
			if a := got[i]; a != id {
				for _, o := range ids {
					if o != id && MatchID(o, a) {
						t.Fatalf("ids %q: %q abbreviates %q and %q", ids, a, id, o)
					}
				}
			}
		}
	}
}
