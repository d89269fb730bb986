package cas_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/cas"
)

const helperEnv = "TROVE_CAS_PUT_HELPER"

// processContent is what every process puts: a small blob, one big enough
// to be staged and renamed, and a batch that goes into packs.
func processContent() (small, big []byte, batch [][]byte) {
	small = bytes.Repeat([]byte(`{"role":"user","text":"hello"}`+"\n"), 300)
	big = bytes.Repeat([]byte(`{"role":"tool","output":"0123456789abcdef"}`+"\n"), 60000)
	for i := range 200 {
		batch = append(batch, fmt.Appendf(nil, "file %d\n%s", i, bytes.Repeat([]byte{byte(i)}, 3000+i)))
	}
	return small, big, batch
}

// TestHelperPutProcess is not a test: it is the body of the processes
// TestTwoProcesses starts.
func TestHelperPutProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestTwoProcesses")
	}
	// Start together: the parent closes stdin once every process runs.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	st, err := fs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := cas.Open(context.Background(), st, cas.WithStreamBuffer(256<<10), cas.WithPackSize(128<<10))
	if err != nil {
		t.Fatal(err)
	}
	small, big, batch := processContent()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			var err error
			switch i % 4 {
			case 0:
				_, err = s.Put(ctx, small)
			case 1:
				_, err = s.PutReader(ctx, bytes.NewReader(big))
			case 2:
				_, err = s.PutMany(ctx, batch)
			case 3:
				_, err = s.Put(ctx, big)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestTwoProcesses puts the same content from several goroutines in each of
// two processes on one directory: every blob ends up whole and valid, and no
// staging object is left behind.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	var procs []*exec.Cmd
	var gates []io.WriteCloser
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperPutProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+dir)
		gate, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("helper output:\n%s", out)
			}
		})
		procs = append(procs, cmd)
		gates = append(gates, gate)
	}
	for _, g := range gates {
		g.Close()
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}

	st, err := fs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	s, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	small, big, batch := processContent()
	for _, d := range append([][]byte{small, big}, batch...) {
		ref, _ := cas.Sum(cas.SHA256, d)
		got, err := s.Get(ctx, ref)
		if err != nil || !bytes.Equal(got, d) {
			t.Fatalf("Get(%v) = %d bytes, %v", ref, len(got), err)
		}
	}
	n := 0
	for ref, err := range s.Verify(ctx) {
		if err != nil {
			t.Fatalf("Verify: %v: %v", ref, err)
		}
		n++
	}
	if n < 2+len(batch) {
		t.Fatalf("Verify checked %d copies, want at least %d", n, 2+len(batch))
	}
	for fi, err := range backend.Walk(ctx, st, "blobs") {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(fi.Name, "blobs/tmp/") && !fi.IsDir {
			t.Fatalf("staging object left behind: %s", fi.Name)
		}
	}
}
