package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/internal/racebuild"
	"github.com/trovekit/trove/session"
)

// TestListedJSONAsPrintJSON checks that the hand-written `ls --json`
// says what printJSON's normalization would of the same sessions.
func TestListedJSONAsPrintJSON(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	list := []session.Metadata{
		{ID: "a1", Path: "sessions/--w--/a.jsonl", ProjectHash: "--w--", Cwd: "/w", Title: "t \"q\" <b>\n", Model: "m",
			CreatedAt: at, UpdatedAt: at.Add(time.Hour), MessageCount: 3, TurnCount: 1, InputTokens: 10, OutputTokens: 5,
			TotalTokens: 15, CostUSD: 0.0051, ExitReason: "done", ParentID: "p", AgentName: "coder", FirstMessage: "hé\u2028"},
		{ID: "b2", Path: "sessions/--w--/b.jsonl", ProjectHash: "--w--", Cwd: "/w", CreatedAt: at, UpdatedAt: at},
	}
	short := []string{"a1", "b2"}
	type listed struct {
		session.Metadata
		ShortID string `json:"short_id"`
	}
	var want []any
	for i, m := range list {
		n, err := normalize(listed{m, short[i]})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, n)
	}
	wantJSON, _ := json.Marshal(want)
	got := listJSON(t, list, short)
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("ls --json is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(wantJSON, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("ls --json:\n%s\nwant:\n%s", got, wantJSON)
	}
	if string(listJSON(t, nil, nil)) != "[]\n" {
		t.Fatal("an empty listing is not []")
	}
	// A long listing is written in chunks: one array, in order.
	long := make([]session.Metadata, 2501)
	longShort := make([]string, len(long))
	for i := range long {
		long[i] = list[i%2]
		long[i].ID = fmt.Sprint(i)
		longShort[i] = fmt.Sprint("s", i)
	}
	var ids []struct {
		ID    string
		Short string `json:"short_id"`
	}
	if err := json.Unmarshal(listJSON(t, long, longShort), &ids); err != nil || len(ids) != len(long) {
		t.Fatalf("a listing of %d: %d sessions, %v", len(long), len(ids), err)
	}
	for i, m := range ids {
		if m.ID != fmt.Sprint(i) || m.Short != longShort[i] {
			t.Fatalf("session %d of the listing is %s (%s)", i, m.ID, m.Short)
		}
	}
}

func listJSON(t *testing.T, list []session.Metadata, short []string) []byte {
	var b bytes.Buffer
	if err := writeListed(&b, list, short); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A listing whose reader went away stops with the write error.
func TestListedStopsAtAWriteError(t *testing.T) {
	list := make([]session.Metadata, 5000)
	w := &failAfter{n: 3}
	if err := writeListed(w, list, make([]string, len(list))); err == nil || w.n != 0 {
		t.Fatalf("writeListed = %v after %d writes left", err, w.n)
	}
}

type failAfter struct{ n int }

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, io.ErrClosedPipe
	}
	f.n--
	return len(b), nil
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if got, ago, err := parseSince("36h", now); err != nil || !got.Equal(now.Add(-36*time.Hour)) || !ago {
		t.Fatalf("36h: %v %v %v", got, ago, err)
	}
	if got, ago, err := parseSince("2026-11-01T00:00:00Z", now); err != nil || got.Day() != 1 || ago {
		t.Fatalf("rfc3339: %v %v %v", got, ago, err)
	}
	for _, bad := range []string{"yesterday", "-5h", ""} {
		if _, _, err := parseSince(bad, now); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// Every abbreviation `trove ls` prints opens its session with `trove show`:
// 1,000 sessions made within one minute (uuid v7 ids share their first
// digits), each with a prompt of its own.
func TestShowTakesTheAbbreviationLsPrints(t *testing.T) {
	root := t.TempDir()
	ctx := t.Context()
	st, err := fs.NewOS(root)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	n := 0
	s, err := session.OpenStore(ctx, st, session.WithInlineBlobs(), session.WithClock(func() time.Time { n++; return at.Add(time.Duration(n) * 50 * time.Millisecond) }))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AppendMessage(ctx, json.RawMessage(fmt.Sprintf(`{"role":"user","content":"prompt number %d","timestamp":1}`, i))); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, out, errOut := trove(t, "", "--store", root, "--json", "ls", "--all")
	if code != exitOK {
		t.Fatalf("ls: %d %s", code, errOut)
	}
	var listed []struct {
		ID           string `json:"id"`
		ShortID      string `json:"short_id"`
		FirstMessage string `json:"first_message"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1000 {
		t.Fatalf("ls --json: %d sessions, %v", len(listed), err)
	}
	longest, shortest, shown := 0, len(listed[0].ShortID), 0
	for _, l := range listed {
		shortest = min(shortest, len(l.ShortID))
	}
	for i, l := range listed {
		longest = max(longest, len(l.ShortID))
		// Under -race each show costs 60 ms: there, every abbreviation
		// longer than the shortest (the ones a near neighbour lengthened)
		// and one in ten of the rest.
		if racebuild.Enabled && len(l.ShortID) == shortest && i%10 != 0 {
			continue
		}
		shown++
		code, out, errOut := trove(t, "", "--store", root, "show", l.ShortID)
		if code != exitOK || !strings.Contains(out, l.FirstMessage) || !strings.Contains(out, l.ID) {
			t.Fatalf("show %s (%s): %d %s\n%s", l.ShortID, l.ID, code, errOut, out)
		}
	}
	t.Logf("1,000 sessions in a minute: abbreviations of %d to %d characters; the %d shown open their sessions", shortest, longest, shown)
}

// TestLsReplaysAnUnchangedListing: `ls` prints the same listing from its
// output cache while nothing changed (a cache file beside the index), and
// a session added since shows at once; each format has its own cache, and
// a --since that moves with the clock keeps none.
func TestLsReplaysAnUnchangedListing(t *testing.T) {
	root := t.TempDir()
	ctx := t.Context()
	st, err := fs.NewOS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := session.OpenStore(ctx, st, session.WithInlineBlobs())
	if err != nil {
		t.Fatal(err)
	}
	add := func(prompt string) string {
		h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AppendMessage(ctx, json.RawMessage(fmt.Sprintf(`{"role":"user","content":%q,"timestamp":1}`, prompt))); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return h.ID()
	}
	add("one")
	add("two")
	// Times an hour old: settled, as a store's are between two commands.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	age := func() {
		err := filepath.WalkDir(root, func(p string, _ iofs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Chtimes(p, old, old)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	caches := func() []string {
		m, _ := filepath.Glob(filepath.Join(root, "sessions", ".index", ".ls-*"))
		return m
	}
	ls := func(args ...string) string {
		t.Helper()
		code, out, errOut := trove(t, "", append([]string{"--store", root}, args...)...)
		if code != exitOK {
			t.Fatalf("ls: %d %s", code, errOut)
		}
		return out
	}
	// The first listings write the index (and its times), which is aged
	// again after each, until one is kept.
	var first string
	for range 4 {
		age()
		if out := ls("--json", "ls", "--all"); first == "" {
			first = out
		} else if out != first {
			t.Fatalf("ls --json changed on an unchanged store:\n%s\nwas:\n%s", out, first)
		}
	}
	kept := caches()
	if len(kept) != 1 {
		t.Fatalf("cached listings %v, want one", kept)
	}
	// Replayed from now on: the same bytes, the cache left as it was.
	stamp := func() time.Time {
		fi, err := os.Stat(kept[0])
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	was := stamp()
	for range 2 {
		if out := ls("--json", "ls", "--all"); out != first {
			t.Fatalf("replayed ls --json:\n%s\nwas:\n%s", out, first)
		}
	}
	if !stamp().Equal(was) {
		t.Fatal("the cached listing was written again, not replayed")
	}
	plain := ls("ls", "--all")
	age()
	if plain == first || ls("ls", "--all") != plain || ls("ls", "--all") != plain || ls("ls", "--all") != plain || len(caches()) != 2 {
		t.Fatalf("plain ls %q (cached %v)", plain, caches())
	}
	ls("--json", "ls", "--all", "--since", "2h")
	if len(caches()) != 2 {
		t.Fatalf("a moving --since was cached: %v", caches())
	}
	id := add("three")
	if out := ls("--json", "ls", "--all"); !strings.Contains(out, id) || strings.Count(out, `"id"`) != 3 {
		t.Fatalf("a new session is missing from ls --json:\n%s", out)
	}
	if out := ls("ls", "--all"); !strings.Contains(out, "three") {
		t.Fatalf("a new session is missing from ls:\n%s", out)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "16MiB": 16 << 20, "200MB": 200e6, "1.5 GiB": 3 << 29, "2k": 2048, "7b": 7} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MB", "-1", "12 parsecs", "1e400", "99999999999GiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}
