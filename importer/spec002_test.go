package importer_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/importer"
)

func TestImportSpec002(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "spec002")
	before := snapshot(t, src)
	s, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := importer.Import(ctx, s, []string{src}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !res[0].Imported || res[0].Format != "spec002" || res[0].Messages != 4 {
		t.Fatalf("results: %+v", res)
	}
	msgs, err := s.Sessions().LoadMessages(ctx, res[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	var all string
	for _, e := range msgs {
		roles = append(roles, e.Role())
		all += string(e.JSON())
	}
	if got := strings.Join(roles, " "); got != "user assistant toolResult assistant" {
		t.Errorf("roles %s", got)
	}
	for _, want := range []string{"List the files", `"type":"toolCall"`, `"arguments":{"command":"ls"}`, `"toolCallId":"call_abc"`,
		`"thinking":"Use bash."`, `"provider":"anthropic"`, `"totalTokens":36`, "main.go and pkg/."} {
		if !strings.Contains(all, want) {
			t.Errorf("imported session lacks %s", want)
		}
	}
	again, err := importer.Import(ctx, s, []string{src}, importer.Options{From: "spec002"})
	if err != nil || len(again) != 1 || again[0].Imported {
		t.Errorf("second import: %+v %v", again, err)
	}
	for p, b := range snapshot(t, src) {
		if string(before[p]) != string(b) {
			t.Errorf("%s changed", p)
		}
	}
}
