package session

import (
	"context"
	"fmt"
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
	for _, id := range ids {
		a := ab[id]
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
