package logging_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend/logging"
	"github.com/trovekit/trove/backend/mem"
)

// New logs each call with its op, name and error, failures at warn.
func TestLogged(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := logging.New(mem.New(), l)
	ctx := t.Context()
	s.WriteFile(ctx, "a", []byte("123"))
	s.ReadFile(ctx, "missing")
	s.Rename(ctx, "a", "b/../c")
	out := buf.String()
	for _, want := range []string{
		"level=DEBUG msg=trove/backend op=WriteFile name=a n=3",
		"level=DEBUG msg=trove/backend op=ReadFile name=missing",
		"level=WARN msg=trove/backend op=Rename name=a to=b/../c",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
