package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// progressRuns are the long commands that show a bar, each with what its
// bar says; they run in order on one store.
func progressRuns(t *testing.T) (store string, runs [][]string, says []string) {
	store, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "..", "..", "importer", "testdata", "claude")
	runs = [][]string{
		{"import", src},
		{"search", "--all", "greeting"},
		{"checkpoint", "--dir", ws, "create", "cp"},
		{"checkpoint", "--dir", ws, "rewind", "cp"},
		{"gc"},
		{"fsck"},
		{"blob", "verify"},
		{"mirror", store, t.TempDir()},
	}
	says = []string{"importing", "indexing sessions for search", "snapshotting", "rewinding", "collecting garbage", "checking the store", "verifying blobs", "mirroring"}
	return store, runs, says
}

// Without a terminal on stderr (a buffer, a file) nothing but errors goes
// there: no bar, no escape codes.
func TestNoProgressWithoutTerminal(t *testing.T) {
	store, runs, _ := progressRuns(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, args := range runs {
		var stderr io.Writer = &bytes.Buffer{}
		if i%2 == 1 {
			stderr = f // a regular file: the operating system says it is no terminal
		}
		var out bytes.Buffer
		code := run(context.Background(), append([]string{"--store", store}, args...), strings.NewReader(""), &out, stderr)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, out.String())
		}
		if b, ok := stderr.(*bytes.Buffer); ok && b.Len() > 0 {
			t.Errorf("%v wrote to stderr: %q", args, b.String())
		}
	}
	if b, err := os.ReadFile(f.Name()); err != nil || len(b) > 0 {
		t.Errorf("stderr file holds %q (%v)", b, err)
	}
}

// On a terminal each long command shows its bar, cleared when done, and
// writes the same output as without one.
func TestProgressOnTerminal(t *testing.T) {
	store, runs, says := progressRuns(t)
	for i, args := range runs {
		var out, stderr bytes.Buffer
		// Every refresh of the catalog shows its bar: the test store is small.
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &stderr, terminal: func(io.Writer) bool { return true }, indexBarFiles: 1}
		if code := a.run(context.Background(), append([]string{"--store", store}, args...)); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), says[i]) {
			t.Errorf("%v: stderr %q lacks %q", args, stderr.String(), says[i])
		}
		if strings.Contains(out.String(), says[i]) {
			t.Errorf("%v: the bar went to stdout", args)
		}
	}
	// --json keeps stderr for JSON errors: no bar.
	var stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, terminal: func(io.Writer) bool { return true }}
	if code := a.run(context.Background(), []string{"--store", store, "--json", "fsck"}); code != 0 || stderr.Len() > 0 {
		t.Errorf("fsck --json on a terminal: exit %d, stderr %q", code, stderr.String())
	}
}

// Refreshes in one process (serve) may overlap: their progress reaches
// the bar from two goroutines, and the race detector sees no race.
func TestIndexBarOverlapping(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr, stdout: io.Discard, terminal: func(io.Writer) bool { return true }, indexBarFiles: 1}
	tell := a.indexBar()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for done := range 11 {
				tell(done, 10)
			}
		})
	}
	wg.Wait()
	if a.barOn.Load() {
		t.Error("a bar is left on after every refresh was through")
	}
}

// A bar of known length shows its share done and its count, and done
// clears its line and says no bar is on.
func TestBarDraws(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr, terminal: func(io.Writer) bool { return true }}
	b := a.progress(4, "copying")
	if !a.barOn.Load() || !strings.Contains(stderr.String(), "copying   0% |") {
		t.Fatalf("a new bar drew %q", stderr.String())
	}
	b.drawn = time.Time{} // due for a redraw
	b.set(2, 4)
	if want := "copying  50% |" + strings.Repeat("█", 15) + strings.Repeat(" ", 15) + "| (2/4)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("half done drew %q, want %q in it", stderr.String(), want)
	}
	b.done()
	if !strings.HasSuffix(stderr.String(), "\r\x1b[K") || a.barOn.Load() {
		t.Errorf("done left %q, bar on %v", stderr.String(), a.barOn.Load())
	}
	n := stderr.Len()
	b.add(1)
	b.done()
	if stderr.Len() != n {
		t.Errorf("a finished bar wrote %q", stderr.String()[n:])
	}
}

// A spinner counts its steps and stops drawing when done returns.
func TestSpinnerDraws(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr, terminal: func(io.Writer) bool { return true }}
	b := a.progress(-1, "verifying")
	b.mu.Lock()
	b.drawn = time.Time{}
	b.mu.Unlock()
	b.add(3)
	b.done()
	if !strings.Contains(stderr.String(), "verifying ⠋ (3) [0s]") {
		t.Errorf("spinner drew %q", stderr.String())
	}
	n := stderr.Len()
	b.done()
	if stderr.Len() != n {
		t.Errorf("a finished spinner wrote %q", stderr.String()[n:])
	}
}

// A line wider than the terminal would wrap, and the next draw could not
// clear it: the description gives way, keeping its end.
func TestFitLine(t *testing.T) {
	for _, c := range []struct {
		desc       string
		tail, cols int
		want       string
	}{
		{"snapshotting /a/b", 10, 0, "snapshotting /a/b"},
		{"snapshotting /a/b", 10, 40, "snapshotting /a/b"},
		{"snapshotting /a/b", 10, 20, "…ing /a/b"},
		{"snapshotting /a/b", 10, 12, ""},
	} {
		if got := fitLine(c.desc, c.tail, c.cols); got != c.want {
			t.Errorf("fitLine(%q, %d, %d) = %q, want %q", c.desc, c.tail, c.cols, got, c.want)
		}
	}
}
