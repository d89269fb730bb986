package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/spy"
)

// fakeSession is a session file written by hand, as another program would.
type fakeSession struct {
	id, cwd, title string
	lines          [][]byte
}

func (f *fakeSession) path() string {
	return "sessions/--" + strings.Trim(strings.ReplaceAll(f.cwd, "/", "-"), "-") + "--/2026-01-01T00-00-00-000Z_" + f.id + ".jsonl"
}

func (f *fakeSession) header() []byte {
	h, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": f.id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": f.cwd, "title": f.title})
	return h
}

// message adds a message entry; content is a string or blocks.
func (f *fakeSession) message(id, parent string, msg map[string]any) []byte {
	e := map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-02T03:04:05.000Z", "message": msg}
	if parent == "" {
		e["parentId"] = nil
	}
	b, _ := json.Marshal(e)
	f.lines = append(f.lines, b)
	return b
}

func (f *fakeSession) bytes() []byte {
	out := append(f.header(), '\n')
	for _, l := range f.lines {
		out = append(append(out, l...), '\n')
	}
	return out
}

func writeFile(t testing.TB, st backend.Storage, name string, data []byte) {
	t.Helper()
	if err := st.WriteFile(context.Background(), name, data); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t testing.TB, st backend.Storage, name string, data []byte) {
	t.Helper()
	w, err := st.OpenWriter(context.Background(), name, backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func openCatalog(t testing.TB, dir string, st backend.Storage) *Catalog {
	t.Helper()
	c, err := Open(context.Background(), dir, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// searchAll runs q and returns its hits in order.
func searchAll(t testing.TB, c *Catalog, q Query) []Hit {
	t.Helper()
	var out []Hit
	for h, err := range c.Search(context.Background(), q) {
		if err != nil {
			t.Fatalf("search %q: %v", q.Text, err)
		}
		out = append(out, h)
	}
	return out
}

// agreesWithBruteForce runs n random queries on c and fails at the first
// whose hits are not those of a scan of sessions; what says when.
func agreesWithBruteForce(t *testing.T, c *Catalog, sessions []*fakeSession, r *rand.Rand, n int, what string) {
	t.Helper()
	for range n {
		q := randomQuery(r)
		if got, want := hitKeys(t, c, Query{Text: q}), bruteForce(t, sessions, q, nil); !slices.Equal(got, want) {
			t.Fatalf("%s, query %q:\n got %q\nwant %q", what, q, got, want)
		}
	}
}

// hitKeys runs q and returns its hits as "session/entry", sorted.
func hitKeys(t testing.TB, c *Catalog, q Query) []string {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 1 << 30
	}
	var out []string
	for h, err := range c.Search(context.Background(), q) {
		if err != nil {
			t.Fatalf("search %q: %v", q.Text, err)
		}
		out = append(out, h.SessionID+"/"+h.EntryID)
	}
	slices.Sort(out)
	return out
}

// vocabulary for random corpora: plain words, compounds of each kind,
// words sharing prefixes, and non-ASCII.
var vocabulary = []string{
	"parse", "ref", "parseRef", "parse_ref", "PARSE_REF", "cas/ref.go", "HTTPServer", "http", "server",
	"alpha", "alphabet", "alpine", "beta", "gamma", "delta", "fix", "fixed", "fixture", "test", "tests",
	"greet", "hello", "world", "bye", "Zürich", "über", "naïve", "go", "Go", "ok", "x1", "v2Beta", "error",
	"errors.Is", "fs.ErrNotExist", "make", "build", "the", "a", "of", "and", "or", "not",
}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString([]string{" ", " ", ", ", "\n", ". ", "(", ")"}[r.IntN(7)])
		}
		b.WriteString(vocabulary[r.IntN(len(vocabulary))])
	}
	return b.String()
}

// randomSession is a session of random messages of every role.
func randomSession(r *rand.Rand, i int) *fakeSession {
	f := &fakeSession{id: fmt.Sprintf("s%04d", i), cwd: fmt.Sprintf("/w/p%d", i%3), title: randomText(r, 3)}
	parent := ""
	for j := range 2 + r.IntN(6) {
		id := fmt.Sprintf("e%d", j)
		var msg map[string]any
		switch r.IntN(4) {
		case 0:
			msg = map[string]any{"role": "user", "content": randomText(r, 4+r.IntN(12))}
		case 1:
			msg = map[string]any{"role": "assistant", "model": []string{"m1", "m2"}[r.IntN(2)], "content": []any{
				map[string]any{"type": "thinking", "thinking": randomText(r, 5)},
				map[string]any{"type": "text", "text": randomText(r, 8)},
				map[string]any{"type": "toolCall", "id": "c", "name": "bash", "arguments": map[string]any{"command": randomText(r, 3)}},
			}}
		case 2:
			msg = map[string]any{"role": "toolResult", "toolName": "bash", "isError": r.IntN(3) == 0, "content": []any{
				map[string]any{"type": "text", "text": randomText(r, 10)},
			}}
		default:
			msg = map[string]any{"role": "assistant", "model": "m1", "content": []any{map[string]any{"type": "text", "text": randomText(r, 6)}}}
		}
		f.message(id, parent, msg)
		parent = id
	}
	return f
}

// randomStore writes n random sessions to st.
func randomStore(t testing.TB, st backend.Storage, r *rand.Rand, n int) []*fakeSession {
	t.Helper()
	var sessions []*fakeSession
	for i := range n {
		s := randomSession(r, i)
		sessions = append(sessions, s)
		writeFile(t, st, s.path(), s.bytes())
	}
	return sessions
}

// spiedOS is a store on the OS file system in a temporary directory,
// behind a spy.
func spiedOS(t testing.TB) *spy.Storage {
	t.Helper()
	osst, err := fs.NewOS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { osst.Close() })
	return spy.New(osst)
}

func newMem() backend.Storage { return mem.New() }

// queryInt is the integer a one-row query of c's database answers.
func queryInt(t testing.TB, c *Catalog, query string) int64 {
	t.Helper()
	db, err := c.handle()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
