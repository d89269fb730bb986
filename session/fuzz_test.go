package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session/tree"
)

// FuzzLoad loads arbitrary files. Invariants: no panic; every non-blank
// line is the header, an entry, or a reported problem; the leaf is an entry
// of the file; the context rebuilds as valid UTF-8 JSON. The seed
// testdata/fuzz/FuzzLoad/invalid-utf8 holds ill-formed sequences.
func FuzzLoad(f *testing.F) {
	for seed := range uint64(40) {
		data, _ := generateTree(seed)
		f.Add([]byte(data))
	}
	f.Add([]byte(h1 + "\n" + `{"type":"session","version":3,"id":"s2","timestamp":"x","cwd":"/x"}` + "\n"))
	f.Add([]byte(`{"type":"session","id":"v1"}` + "\n" + `{"type":"message","message":{"role":"user","content":"x"}}` + "\n" + `{"type":"compaction","firstKeptEntryIndex":1,"summary":"s"}`))
	f.Add([]byte(`{"id":"s","type":"message","role":"user","content":"agent JSONL"}`))
	f.Add([]byte("\xef\xbb\xbf" + h1 + "\r\n{\n"))
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := st.WriteFile(ctx, "f.jsonl", data); err != nil {
			t.Fatal(err)
		}
		var problems []tree.Problem
		s, err := tree.Open(ctx, st, "f.jsonl", tree.ReadOnly(),
			tree.WithReport(func(p tree.Problem) { problems = append(problems, p) }))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if s.Leaf() != nil && s.Entry(s.Leaf().ID()) != s.Leaf() {
			t.Fatalf("the leaf %q is not an entry of the file", s.Leaf().ID())
		}
		// The context is valid UTF-8 JSON whatever the file's bytes.
		if out, err := json.Marshal(s.Context()); err != nil || !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("context: %v, %q", err, out)
		}
		if errors.Is(s.Err(), tree.ErrNoHeader) {
			return
		}
		lines := 0
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		reported := map[int]bool{}
		for _, p := range problems {
			if p.Line > 0 {
				reported[p.Line] = true
			}
		}
		accounted := 1 + len(reported) // the header
		for _, e := range s.Entries() {
			if !reported[e.Line()] {
				accounted++
			}
		}
		if accounted < lines && !isMigratedOrDialect(problems) {
			t.Fatalf("%d non-blank lines, %d are the header, entries or problems", lines, accounted)
		}
	})
}

// isMigratedOrDialect: agent JSONL files are converted line by line, and
// their line numbers are the converted file's.
func isMigratedOrDialect(ps []tree.Problem) bool {
	for _, p := range ps {
		if errors.Is(p, tree.ErrMigrated) {
			return true
		}
	}
	return false
}
