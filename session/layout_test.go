package session_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

func TestEncodeCwd(t *testing.T) {
	for cwd, want := range map[string]string{
		"/work/pi":          "--work-pi--",
		`C:\Users\me\proj`:  "--C--Users-me-proj--",
		`\server\share`:     "--server-share--",
		"relative/dir":      "--relative-dir--",
		"/":                 "----",
		"/a\x00b\nc":        "--a-b-c--",
		"/caf\xe9":          "--caf---",
		"/with space/ünï":   "--with space-ünï--",
		"/has.~reserved/x:": "--has.~reserved-x---",
	} {
		got := session.EncodeCwd(cwd)
		if got != want {
			t.Errorf("EncodeCwd(%q) = %q, want %q", cwd, got, want)
		}
		if err := backend.ValidPath(session.CwdDir(cwd)); err != nil {
			t.Errorf("CwdDir(%q): %v", cwd, err)
		}
	}
	long := "/" + strings.Repeat("é", 300)
	a, b := session.EncodeCwd(long), session.EncodeCwd(long+"x")
	if len(a) > backend.MaxElemBytes || a == b || backend.ValidPath(a) != nil || !strings.HasSuffix(a, "--") {
		t.Errorf("long cwd: %q (%d bytes)", a, len(a))
	}
}

func TestSessionPath(t *testing.T) {
	at := time.Date(2026, 2, 16, 10, 20, 30, 123e6, time.FixedZone("x", 3600))
	got := session.SessionPath("/work/pi", at, "1f9d2a6b9c0d1234")
	if want := "sessions/--work-pi--/2026-02-16T09-20-30-123Z_1f9d2a6b9c0d1234.jsonl"; got != want {
		t.Errorf("SessionPath = %q, want %q", got, want)
	}
	if session.BreadcrumbPath("ttys001") != "terminal-sessions/--ttys001--" {
		t.Errorf("BreadcrumbPath = %q", session.BreadcrumbPath("ttys001"))
	}
}

// TestListNewestByModTime: a session appended to later comes first, whatever
// its creation time.
func TestListNewestByModTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := mem.New(mem.WithClock(func() time.Time { return now }))
	defer st.Close()
	var names []string
	for i, id := range []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "cccccccccccccccc"} {
		name := session.SessionPath("/w", now, id)
		s, err := tree.Create(st, name, tree.Header{ID: id, Cwd: "/w"})
		must(t, err)
		_, err = s.AppendMessage(ctx, userMsg("hello "+id))
		must(t, err)
		_, err = s.AppendMessage(ctx, assistantMsg("x"))
		must(t, err)
		must(t, s.Close(ctx))
		names = append(names, name)
		now = now.Add(time.Duration(i+1) * time.Minute)
	}
	// Touch the oldest.
	s, err := tree.Open(ctx, st, names[0])
	must(t, err)
	_, err = s.AppendMessage(ctx, userMsg("more"))
	must(t, err)
	must(t, s.Close(ctx))
	var got []string
	for info, err := range storeOn(t, st).Discover(ctx, session.Discovery{Cwd: "/w", Concurrency: 2}) {
		must(t, err)
		got = append(got, info.ID)
		if info.FirstMessage != "hello "+info.ID {
			t.Errorf("first message %q", info.FirstMessage)
		}
	}
	if strings.Join(got, ",") != "aaaaaaaaaaaaaaaa,cccccccccccccccc,bbbbbbbbbbbbbbbb" {
		t.Errorf("order %v", got)
	}
	// Stopping early is fine.
	for range storeOn(t, st).Discover(ctx, session.Discovery{All: true}) {
		break
	}
}

func TestInfoFromPrefixOnly(t *testing.T) {
	st := newMem(t)
	name := session.SessionPath("/w", time.Now(), "dddddddddddddddd")
	s, err := tree.Create(st, name, tree.Header{ID: "dddddddddddddddd", Cwd: "/w", Title: "big"})
	must(t, err)
	// The first user message starts past the prefix: discovery must not
	// read on to find it.
	_, err = s.Append(ctx, &tree.Custom{CustomType: "pad", Data: []byte(`"` + strings.Repeat("p", 5000) + `"`)})
	must(t, err)
	_, err = s.AppendMessage(ctx, userMsg("late"))
	must(t, err)
	_, err = s.AppendMessage(ctx, assistantMsg("x"))
	must(t, err)
	must(t, s.Close(ctx))
	info, err := storeOn(t, st).Recent(ctx, "/w", "")
	must(t, err)
	if info.ID != "dddddddddddddddd" || info.Title != "big" || info.FirstMessage != "" || info.Size < 5000 {
		t.Errorf("info %+v", info)
	}
}

func TestBreadcrumbs(t *testing.T) {
	st := newMem(t)
	if _, _, err := session.ReadBreadcrumb(ctx, st, "t1"); err == nil {
		t.Error("missing breadcrumb read")
	}
	must(t, session.WriteBreadcrumb(ctx, st, "t1", "/w", "sessions/--w--/x.jsonl"))
	cwd, p, err := session.ReadBreadcrumb(ctx, st, "t1")
	must(t, err)
	if cwd != "/w" || p != "sessions/--w--/x.jsonl" {
		t.Errorf("breadcrumb %q %q", cwd, p)
	}
	if got := string(read(t, st, session.BreadcrumbPath("t1"))); got != "/w\nsessions/--w--/x.jsonl\n" {
		t.Errorf("breadcrumb file %q: want two lines, cwd then path", got)
	}
	// A breadcrumb naming a missing file falls back to the newest session.
	if _, err := storeOn(t, st).Recent(ctx, "/w", "t1"); err == nil {
		t.Error("continue found a session where there is none")
	}
	must(t, st.WriteFile(ctx, session.BreadcrumbPath("bad"), []byte("one line only")))
	if _, _, err := session.ReadBreadcrumb(ctx, st, "bad"); !errors.Is(err, tree.ErrCorrupt) {
		t.Errorf("bad breadcrumb: %v", err)
	}
	if err := session.WriteBreadcrumb(ctx, st, "", "/w", "x"); !errors.Is(err, tree.ErrInvalid) {
		t.Errorf("empty terminal id: %v", err)
	}
}

func TestTerminalID(t *testing.T) {
	env := map[string]string{"TERM_SESSION_ID": "w0t0p0:ABC", "TMUX_PANE": "%3"}
	if got := session.TerminalID(func(k string) string { return env[k] }); got != "tmux_pane-%3" {
		t.Errorf("TerminalID = %q", got)
	}
	delete(env, "TMUX_PANE")
	got := session.TerminalID(func(k string) string { return env[k] })
	if got != "term_session_id-w0t0p0:ABC" || backend.ValidPath(session.BreadcrumbPath(got)) != nil {
		t.Errorf("TerminalID = %q", got)
	}
	if session.TerminalID(func(string) string { return "" }) != "" {
		t.Error("no terminal: want empty")
	}
}
