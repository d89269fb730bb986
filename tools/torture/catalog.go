package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/catalog"
)

// searchWord is a word that only message i of child seed holds: its
// search must find that one entry.
func searchWord(seed uint64, i int) string { return fmt.Sprintf("tq%dx%d", seed, i) }

// searchOwn searches the catalog for the word of the message just
// flushed, a time in four after rebuilding the catalog from nothing, so
// that kills land inside catalog updates. The "searching" ack tells the
// parent a kill landed there.
func searchOwn(ctx context.Context, s *trove.Store, rng *rand.Rand, word string, ack func(Ack) error) error {
	if err := ack(Ack{Op: "searching", Word: word}); err != nil {
		return err
	}
	if rng.IntN(4) == 0 {
		c, err := s.Catalog(ctx)
		if err != nil {
			return err
		}
		if err := c.Rebuild(ctx); err != nil {
			return err
		}
	}
	n, err := countHits(ctx, s, word)
	if err != nil {
		return err
	}
	return ack(Ack{Op: "search", Word: word, Hits: n})
}

func countHits(ctx context.Context, s *trove.Store, word string) (int, error) {
	n := 0
	for _, err := range s.Search(ctx, catalog.Query{Text: word}) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// checkSearches checks, after a kill, that a search finds each
// acknowledged message exactly once, in its session, and that each search
// a child finished had found its message once.
func checkSearches(ctx context.Context, s *trove.Store, acks []Ack, res *Result) {
	for _, a := range acks {
		switch {
		case a.Op == "search" && a.Hits != 1:
			res.CatalogWrong++
			res.fail("the child's search for %s found %d hits, want 1", a.Word, a.Hits)
		case a.Op == "msg" && a.Word != "":
			res.SearchesChecked++
			var sessions []string
			for h, err := range s.Search(ctx, catalog.Query{Text: a.Word}) {
				if err != nil {
					res.CatalogWrong++
					res.fail("search %s: %v", a.Word, err)
					return
				}
				sessions = append(sessions, h.SessionID)
			}
			if len(sessions) != 1 || sessions[0] != a.Session {
				res.CatalogWrong++
				res.fail("search %s: hits in sessions %v, want one in %s", a.Word, sessions, a.Session)
			}
		}
	}
}
