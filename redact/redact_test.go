package redact

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

const (
	fakeGitHub = "ghp_Z8xk2LmQ9vTnR4bWc7YpJ3sHd6FgA1eK0uVo"
	fakeAWS    = "AKIAQ3EGRTXBK7Z4WUNS"
)

func TestRedactJSONKeepsStructure(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	line := `{"type":"message","id":"a1b2c3d4","parentId":"00ff00ff","message":{"role":"toolResult","content":[{"type":"text","text":"GITHUB_TOKEN=` + fakeGitHub + `\nok"}],"details":{"n":3,"ref":"blob:sha256:` + strings.Repeat("ab", 32) + `"}}}`
	out, fs, err := d.JSON([]byte(line), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Detector != "github-pat" {
		t.Fatalf("findings %+v, want one github-pat", fs)
	}
	if strings.Contains(string(out), fakeGitHub) || !strings.Contains(string(out), "[REDACTED:github-pat]") {
		t.Fatalf("not redacted: %s", out)
	}
	var v struct {
		ID       string `json:"id"`
		ParentID string `json:"parentId"`
		Message  struct {
			Content []struct{ Text string }
			Details map[string]any
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("redacted line does not parse: %v\n%s", err, out)
	}
	if v.ID != "a1b2c3d4" || v.ParentID != "00ff00ff" || v.Message.Content[0].Text != "GITHUB_TOKEN=[REDACTED:github-pat]\nok" || v.Message.Details["n"] != 3.0 {
		t.Fatalf("redacted line changed more than the secret: %+v", v)
	}
	// Everything outside the one string is byte for byte the same.
	if !strings.HasPrefix(string(out), line[:strings.Index(line, `"GITHUB_TOKEN`)]) || !strings.HasSuffix(string(out), line[strings.Index(line, `\nok"`)+4:]) {
		t.Fatalf("bytes around the secret changed:\n%s\n%s", line, out)
	}
	clean := []byte(`{"id":"x","text":"nothing here"}`)
	if got, fs, _ := d.JSON(clean, nil); &got[0] != &clean[0] || fs != nil {
		t.Fatal("a clean line was copied or reported")
	}
}

func TestRedactJSONEdit(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	wantErr := errors.New("no such blob")
	_, _, err = d.JSON([]byte(`["blob:sha256:00"]`), func(s string) (string, error) { return "", wantErr })
	if !errors.Is(err, wantErr) {
		t.Fatalf("edit error %v, want %v", err, wantErr)
	}
	out, _, err := d.JSON([]byte(`{"data":"old","id":"old"}`), func(s string) (string, error) { return strings.ReplaceAll(s, "old", "new"), nil })
	if err != nil || string(out) != `{"data":"new","id":"new"}` {
		t.Fatalf("edit gave %s, %v", out, err)
	}
}

func TestRedactNotJSON(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	out, fs, err := d.JSON([]byte(`{"torn line with `+fakeAWS), nil)
	if err != nil || len(fs) != 1 || strings.Contains(string(out), fakeAWS) {
		t.Fatalf("torn line: %s %v %v", out, fs, err)
	}
}

func TestExcerptMasks(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	text := "first line\nkeys " + fakeAWS + " and " + fakeGitHub + " end\nlast"
	fs := d.Find(text)
	if len(fs) != 2 {
		t.Fatalf("findings %+v, want 2", fs)
	}
	for _, f := range fs {
		if strings.Contains(f.Excerpt, fakeAWS) || strings.Contains(f.Excerpt, fakeGitHub) || strings.Contains(f.Excerpt, fakeGitHub[:10]) {
			t.Errorf("excerpt %q shows a secret", f.Excerpt)
		}
		if strings.Contains(f.Excerpt, "first") || strings.Contains(f.Excerpt, "last") || !strings.Contains(f.Excerpt, " and ") {
			t.Errorf("excerpt %q is not the secret's line", f.Excerpt)
		}
	}
	if got := Mask("abcdefghijkl"); got != "ab**********" {
		t.Errorf("Mask = %q", got)
	}
}

func TestUserRules(t *testing.T) {
	d, err := New(OnlyRules(), WithRules(Rule{ID: "acme", Regex: `acme_([a-z0-9]{12})`, SecretGroup: 1, Keywords: []string{"ACME_"}}))
	if err != nil {
		t.Fatal(err)
	}
	out, found := d.Redact("token acme_0123456789ab and " + fakeGitHub)
	if len(found) != 1 || out != "token acme_[REDACTED:acme] and "+fakeGitHub {
		t.Fatalf("user rule: %q %+v (only the user's rules run)", out, found)
	}
	d, err = New(WithAllow(`^AKIAQ3EG`))
	if err != nil {
		t.Fatal(err)
	}
	if found := d.Find("id " + fakeAWS); len(found) != 0 {
		t.Fatalf("allowed value reported: %+v", found)
	}
	for _, bad := range []Rule{{ID: "", Regex: "x"}, {ID: "x", Regex: "("}, {ID: "x", Regex: "a", SecretGroup: 2}} {
		if _, err := New(WithRules(bad)); !errors.Is(err, fs.ErrInvalid) || !errors.Is(err, ErrBadRule) {
			t.Errorf("rule %+v: error %v, want ErrBadRule", bad, err)
		}
	}
	if _, err := New(WithAllow("[")); !errors.Is(err, ErrBadRule) {
		t.Errorf("bad allow pattern: %v", err)
	}
}

// A secret on the first line of JSONL (a session's header, a file of one
// line) is redacted as on any other; lines without one stay as they are.
func TestJSONLinesFirstLine(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	clean := `{"type":"message","text":"nothing here"}`
	for _, data := range []string{
		`{"type":"session","title":"GITHUB_TOKEN=` + fakeGitHub + `"}` + "\n",
		`{"type":"session","title":"GITHUB_TOKEN=` + fakeGitHub + `"}`,
		`{"type":"session","title":"GITHUB_TOKEN=` + fakeGitHub + `"}` + "\n" + clean + "\n",
		clean + "\n" + `{"type":"message","text":"GITHUB_TOKEN=` + fakeGitHub + `"}` + "\n",
	} {
		out, fs, err := d.JSONLines([]byte(data), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || strings.Contains(string(out), fakeGitHub) {
			t.Errorf("JSONLines(%q) = %q, %d findings; want the token redacted", data, out, len(fs))
		}
		if want := strings.Count(data, "\n"); strings.Count(string(out), "\n") != want || strings.Contains(data, clean) && !strings.Contains(string(out), clean) {
			t.Errorf("JSONLines(%q) = %q: lines not kept", data, out)
		}
	}
}
