package runlog_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/runlog"
)

// Any bytes in a run file load without a panic or an error, and every
// record read is one of the file's lines as written.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(conformance.RunlogSpecExample))
	f.Add([]byte(conformance.RunlogSpecExample[:700]))
	f.Add([]byte("{\"type\":\"header\"}\n[\n{\"type\":\"run.end\",\"ts\":7}\n\xff\n"))
	f.Add([]byte(`{"type":"tool.output","output_ref":{"id":"blob:sha256:` + string(bytes.Repeat([]byte("0"), 64)) + `","byte_size":-1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		st := mem.New()
		defer st.Close()
		s, err := runlog.New(st, runlog.WithMaxLine(1<<16))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.WriteFile(ctx, "runs/2026/02/03/fz.jsonl", data); err != nil {
			t.Fatal(err)
		}
		run, err := s.Load(ctx, "fz")
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		for _, e := range run.Entries {
			if !bytes.Contains(data, e.Raw) || bytes.IndexByte(e.Raw, '\n') >= 0 {
				t.Fatalf("line %d: raw %q is not a line of the file", e.Line, e.Raw)
			}
		}
		if run.Summary.Records != len(run.Entries) {
			t.Fatalf("summary counts %d records, Load holds %d", run.Summary.Records, len(run.Entries))
		}
	})
}
