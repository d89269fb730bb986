//go:build linux

// Command searchbench measures the catalog (issue 34's goal rows) on a
// generated store of 10,000 sessions of ~35 KB, each row against its
// baseline in the same run: a word and a phrase through the CLI against
// ripgrep over the session files, Store.Search in a warm process, the
// catalog's build from nothing against C SQLite (Python's sqlite3)
// putting the same texts into an FTS5 table, the catalog's size against
// the text it indexes, and peak RSS. Each timed query uses a word no
// earlier run asked for.
//
// Usage: go run ./tools/searchbench [-sessions 10000] [-rounds 11] [-keep]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/catalog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/tools/internal/trovebin"
)

func main() {
	n := flag.Int("sessions", 10000, "sessions in the store")
	rounds := flag.Int("rounds", 11, "rounds per row (the median is reported)")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	flag.Parse()
	if err := run(*n, *rounds, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}

// row is one line of the table: trove's figure, the baseline's, and the
// goal as a ratio (base/trove at least goal) or a bound.
type row struct {
	name, trove, base, ratio, goal string
}

var ctx = context.Background()

func run(n, rounds int, keep bool) error {
	tmp, err := os.MkdirTemp("", "searchbench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	} else {
		fmt.Println("keeping", tmp)
	}
	bin := filepath.Join(tmp, "trove")
	stderr, err := os.Create(filepath.Join(tmp, "trove.stderr"))
	if err != nil {
		return err
	}
	defer stderr.Close()
	if err := trovebin.Build(bin); err != nil {
		return err
	}
	fmt.Printf("searchbench: %d sessions of ~35 KB in 20 cwds, %d CPUs, %s\n", n, runtime.NumCPU(), runtime.Version())
	c, err := genCorpus(tmp, n)
	if err != nil {
		return err
	}
	rg, _ := exec.LookPath("rg")
	sessions := filepath.Join(c.root, "sessions")
	var rows []row
	next := 0
	word := func() string { w := c.planted[next%len(c.planted)]; next++; return w }

	// Build from nothing, timed until it answers.
	start := time.Now()
	rss, err := cli(bin, c.root, stderr, "search", "--all", word())
	if err != nil {
		return err
	}
	build := time.Since(start)
	base, err := pythonFTS(c.texts)
	rows = append(rows, row{fmt.Sprintf("build the catalog of %d sessions (%d entries), until it answers", n, c.entries),
		round(build), orNA(base, err), ratio(base, build, err), "<= 4x the baseline"})
	rows = append(rows, row{"peak RSS of a full build (CLI)", mib(rss), "", "", "< 256 MiB"})
	size, err := catalogSize(c.root + ".catalog")
	if err != nil {
		return err
	}
	rows = append(rows, row{fmt.Sprintf("catalog size / text indexed (%.0f MB)", float64(c.textBytes)/1e6),
		fmt.Sprintf("%.0f MB", float64(size)/1e6), "", fmt.Sprintf("%.2fx", float64(size)/float64(c.textBytes)), "<= 0.6x"})

	// A word, warm, through the CLI, against rg -l -i -F.
	var tw, bw []time.Duration
	var searchRSS int64
	for range rounds {
		w := word()
		start := time.Now()
		rss, err := cli(bin, c.root, stderr, "search", "--all", "--json", w)
		if err != nil {
			return err
		}
		tw = append(tw, time.Since(start))
		searchRSS = max(searchRSS, rss)
		if rg != "" {
			start = time.Now()
			if err := exec.Command(rg, "-l", "-i", "-F", w, sessions).Run(); err != nil {
				return fmt.Errorf("rg: %w", err)
			}
			bw = append(bw, time.Since(start))
		}
	}
	rows = append(rows, timedRow(fmt.Sprintf("a word in %d sessions, warm, CLI vs rg -l -i -F", n), tw, bw, rg, ">= 10x"))
	rows = append(rows, row{"peak RSS of a search (CLI)", mib(searchRSS), "", "", "< 256 MiB"})

	// A phrase, top 20 with snippets.
	tw, bw = nil, nil
	for i := range rounds {
		p := c.phrases[i%len(c.phrases)]
		start := time.Now()
		if _, err := cli(bin, c.root, stderr, "search", "--all", "-n", "20", `"`+p+`"`); err != nil {
			return err
		}
		tw = append(tw, time.Since(start))
		if rg != "" {
			start = time.Now()
			if err := exec.Command(rg, "-i", "-F", p, sessions).Run(); err != nil && !isExit1(err) {
				return fmt.Errorf("rg: %w", err)
			}
			bw = append(bw, time.Since(start))
		}
	}
	rows = append(rows, timedRow("a phrase, top 20 with snippets, CLI vs rg -i -F", tw, bw, rg, ">= 10x"))

	var r row

	r, err = flushedRow(bin, c.root, rounds)
	if err != nil {
		return err
	}
	rows = append(rows, r)

	r, err = warmRow(c, word, rounds*40)
	if err != nil {
		return err
	}
	rows = append(rows, r)

	fmt.Println()
	t := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t, "workload\ttrove\tbaseline\tratio\tgoal")
	for _, r := range rows {
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", r.name, r.trove, r.base, r.ratio, r.goal)
	}
	return t.Flush()
}

// warmRow times Store.Search in a warm process: a word in 5 sessions.
func warmRow(c *corpus, word func() string, n int) (row, error) {
	s, err := trove.Open(ctx, c.root)
	if err != nil {
		return row{}, err
	}
	defer s.Close()
	var ds []time.Duration
	for i := range n + 1 {
		w := word()
		start := time.Now()
		hits := 0
		for _, err := range s.Search(ctx, catalog.Query{Text: w}) {
			if err != nil {
				return row{}, err
			}
			hits++
		}
		if i > 0 { // the first opens the catalog
			ds = append(ds, time.Since(start))
		}
		if hits != 5 {
			return row{}, fmt.Errorf("%s: %d hits, want 5", w, hits)
		}
	}
	return row{"Store.Search, warm process, a word in 5 sessions", round(median(ds)), "", "", "< 1 ms"}, nil
}

// flushedRow times the search, through the CLI, of a message another
// trove process (this one) flushed just before: found at the next query.
func flushedRow(bin, root string, rounds int) (row, error) {
	s, err := trove.Open(ctx, root)
	if err != nil {
		return row{}, err
	}
	defer s.Close()
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/p0", Title: "flushed"})
	if err != nil {
		return row{}, err
	}
	defer h.Close(ctx)
	var ds []time.Duration
	for i := range rounds {
		w := fmt.Sprintf("flushword%04d", i)
		if err := h.AppendMessage(ctx, json.RawMessage(fmt.Sprintf(`{"role":"user","content":"a new message: %s","timestamp":%d}`, w, i))); err != nil {
			return row{}, err
		}
		if err := h.Flush(ctx); err != nil {
			return row{}, err
		}
		start := time.Now()
		out, err := exec.Command(bin, "--store", root, "--json", "search", "--all", w).Output()
		if err != nil {
			return row{}, fmt.Errorf("trove search %s: %w", w, err)
		}
		ds = append(ds, time.Since(start))
		if n := strings.Count(string(out), "\n"); n != 1 {
			return row{}, fmt.Errorf("%s, flushed by another process: %d hits, want 1", w, n)
		}
	}
	return row{"a message flushed by another trove process, then searched (CLI)", round(median(ds)), "", "", "found at the next query"}, nil
}

// cli runs the trove command on root and returns its peak RSS in bytes.
// Its stderr goes to the file stderr, as rg's goes to /dev/null: a
// strings.Builder there had os/exec copy it through a pipe on a
// goroutine of this process, which Wait waits for, 0.3-0.5 ms a run
// that was this process's, not trove's (rg was timed without).
func cli(bin, root string, stderr *os.File, args ...string) (int64, error) {
	cmd := exec.Command(bin, append([]string{"--store", root}, args...)...)
	cmd.Stdout = nil
	cmd.Stderr = stderr
	// The command writes at the file's offset, which it shares: what it
	// says starts where the offset is now, after the earlier runs'.
	from, _ := stderr.Seek(0, io.SeekCurrent)
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(stderr.Name())
		return 0, fmt.Errorf("trove %s: %v: %s", strings.Join(args, " "), err, msg[min(int(from), len(msg)):])
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return 0, nil
	}
	return ru.Maxrss << 10, nil
}

// pythonFTS times C SQLite (Python's sqlite3) putting the texts into an
// FTS5 table in one transaction.
func pythonFTS(texts string) (time.Duration, error) {
	script := `
import json, sqlite3, sys, time, os
texts = [json.loads(l) for l in open(sys.argv[1])]
db = sys.argv[1] + ".db"
c = sqlite3.connect(db)
c.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
t = time.time()
with c:
    c.executemany("INSERT INTO t(body) VALUES (?)", ((x,) for x in texts))
print(time.time() - t)
`
	out, err := exec.Command("python3", "-c", script, texts).Output()
	if err != nil {
		return 0, fmt.Errorf("python3: %w", err)
	}
	var secs float64
	if _, err := fmt.Sscan(string(out), &secs); err != nil {
		return 0, err
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func catalogSize(dir string) (int64, error) {
	var n int64
	for _, s := range []string{"", "-wal"} {
		fi, err := os.Stat(filepath.Join(dir, catalog.FileName+s))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}

func timedRow(name string, tw, bw []time.Duration, rg, goal string) row {
	r := row{name: name, trove: round(median(tw)), goal: goal}
	if rg == "" {
		r.base = "n/a (no rg: apt-get install ripgrep)"
		return r
	}
	r.base = round(median(bw))
	r.ratio = fmt.Sprintf("%.1fx", float64(median(bw))/float64(median(tw)))
	return r
}

func isExit1(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 1
}

func orNA(d time.Duration, err error) string {
	if err != nil {
		return "n/a (" + err.Error() + ")"
	}
	return round(d)
}

func ratio(base, trove time.Duration, err error) string {
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%.2fx", float64(trove)/float64(base))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
