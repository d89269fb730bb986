package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	fakeAWSKey = "AKIAQ3EGRTXBK7Z4WUNS"
	fakeGHPAT  = "ghp_Z8xk2LmQ9vTnR4bWc7YpJ3sHd6FgA1eK0uVo"
)

// otherSource is a session file of another agent with two secrets.
const otherSource = `{"type":"session","id":"b1f7c901-5b2e-4d1c-9f0a-1e2d3c4b5a69","version":1,"timestamp":"2026-11-20T14:30:12Z","cwd":"/home/user/project"}
{"type":"message","id":"d4e5f6a7","parent_id":null,"timestamp":"2026-11-20T14:30:13Z","role":"user","message":{"role":"user","content":[{"type":"text","text":"use AWS key ` + fakeAWSKey + ` to deploy"}],"timestamp":1763649013000}}
{"type":"message","id":"e5f6a7b8","parent_id":"d4e5f6a7","timestamp":"2026-11-20T14:30:15Z","role":"assistant","message":{"role":"assistant","content":[{"type":"tool_call","id":"call_abc","name":"bash","arguments":{"command":"GH_TOKEN=` + fakeGHPAT + ` gh repo list"}}],"model":"claude-sonnet-4-5","stop_reason":"tool_use","timestamp":1763649015000}}
`

// jsonLines parses one JSON object per line of out.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", sc.Text(), err)
		}
		objs = append(objs, m)
	}
	return objs
}

func TestScanExportImportRedact(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.jsonl")
	if err := os.WriteFile(src, []byte(otherSource), 0o600); err != nil {
		t.Fatal(err)
	}
	plain, redacted := filepath.Join(dir, "plain"), filepath.Join(dir, "redacted")
	if code, out, errOut := trove(t, "", "--store", plain, "import", src); code != exitOK {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	code, out, errOut := trove(t, "", "--store", plain, "--json", "scan")
	if code != exitProblems {
		t.Fatalf("scan of a store with secrets: exit %d, want 3: %s", code, errOut)
	}
	found := map[string]bool{}
	var id string
	for _, f := range jsonLines(t, out) {
		found[f["detector"].(string)] = true
		id = f["session_id"].(string)
		if f["entry_id"] == "" || id == "" {
			t.Errorf("finding %v lacks its session or entry", f)
		}
		if strings.Contains(f["excerpt"].(string), fakeAWSKey) || strings.Contains(f["excerpt"].(string), fakeGHPAT) {
			t.Errorf("excerpt shows a secret: %v", f)
		}
	}
	if !found["aws-access-token"] || !found["github-pat"] {
		t.Fatalf("scan found %v", found)
	}
	for _, format := range []string{"jsonl", "html", "md"} {
		code, out, errOut := trove(t, "", "--store", plain, "export", id, "--redact", "--format", format)
		if code != exitOK {
			t.Fatalf("export --redact: %d %s", code, errOut)
		}
		if strings.Contains(out, fakeAWSKey) || strings.Contains(out, fakeGHPAT) || !strings.Contains(out, "[REDACTED:aws-access-token]") {
			t.Errorf("export --redact --format %s:\n%s", format, out)
		}
		if format == "jsonl" {
			jsonLines(t, out)
		}
	}
	if code, out, _ := trove(t, "", "--store", plain, "export", id, "--format", "jsonl"); code != exitOK || !strings.Contains(out, fakeAWSKey) {
		t.Error("export without --redact changed the text, or the store lost it")
	}

	if code, out, errOut := trove(t, "", "--store", redacted, "import", "--redact", src); code != exitOK {
		t.Fatalf("import --redact: %d %s %s", code, out, errOut)
	}
	if code, out, _ := trove(t, "", "--store", redacted, "scan"); code != exitOK || !strings.Contains(out, "0 secrets") {
		t.Fatalf("scan after import --redact: %d %s", code, out)
	}
	if b, _ := os.ReadFile(src); string(b) != otherSource {
		t.Fatal("import --redact changed its source")
	}

	mirrored := filepath.Join(dir, "mirrored")
	if code, out, errOut := trove(t, "", "mirror", "--redact", plain, mirrored); code != exitOK {
		t.Fatalf("mirror --redact: %d %s %s", code, out, errOut)
	}
	if code, out, _ := trove(t, "", "--store", mirrored, "scan", id); code != exitOK {
		t.Fatalf("scan after mirror --redact: %d %s", code, out)
	}
	if code, out, _ := trove(t, "", "--store", mirrored, "fsck"); code != exitOK {
		t.Fatalf("fsck after mirror --redact: %d %s", code, out)
	}
}
