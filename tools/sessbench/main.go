//go:build linux

// Command sessbench measures the session store as an agent and its user
// meet it, each row against a baseline run in the same process on the
// same disk: listing 10,000 sessions, `trove ls --all --json` end to end,
// durable appends at three flush rates, and loading a 10,000-entry session.
// It prints one table: trove, baseline, ratio, goal.
//
// Usage: go run ./tools/sessbench [-sessions 10000] [-rounds 5] [-keep]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
	"github.com/trovekit/trove/tools/internal/trovebin"
)

func main() {
	n := flag.Int("sessions", 10000, "sessions in the listed store")
	rounds := flag.Int("rounds", 5, "rounds per row (the median is reported)")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	flag.Parse()
	if err := run(*n, *rounds, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "sessbench:", err)
		os.Exit(1)
	}
}

type row struct {
	name          string
	trove, base   time.Duration
	goal          float64 // base/trove must be at least this
	note          string
	troveA, baseA float64 // allocations per op, when measured
}

var ctx = context.Background()

func run(n, rounds int, keep bool) error {
	tmp, err := os.MkdirTemp("", "sessbench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	}
	fmt.Printf("sessbench: %d sessions of ~35 KB in 20 cwds, %d CPUs, %s\n", n, runtime.NumCPU(), runtime.Version())
	var rows []row
	root := filepath.Join(tmp, "store")
	files, err := genStore(root, n)
	if err != nil {
		return err
	}
	r, err := listRows(root, files, rounds)
	if err != nil {
		return err
	}
	rows = append(rows, r...)
	r, err = appendRows(filepath.Join(tmp, "append"), rounds)
	if err != nil {
		return err
	}
	rows = append(rows, r...)
	lr, err := loadRow(filepath.Join(tmp, "load"), rounds)
	if err != nil {
		return err
	}
	rows = append(rows, lr)

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\ttrove\tbaseline\tratio\tgoal\t")
	for _, r := range rows {
		ratio := float64(r.base) / float64(r.trove)
		goal := fmt.Sprintf(">= %gx met", r.goal)
		switch {
		case r.goal == 0:
			goal = "(no goal)"
		case ratio < r.goal:
			goal = fmt.Sprintf(">= %gx MISSED", r.goal)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%s\t\n", r.name, round(r.trove), round(r.base), ratio, goal)
	}
	tw.Flush()
	for _, r := range rows {
		if r.note != "" {
			fmt.Printf("  %s: %s\n", r.name, r.note)
		}
	}
	fmt.Println("(wall clock, median of rounds; ratio = baseline / trove, higher is better)")
	return nil
}

func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// message is a ~1 KiB assistant message with usage, as agents write them.
func message(i int) json.RawMessage {
	if i%2 == 0 {
		return json.RawMessage(fmt.Sprintf(`{"role":"user","content":"step %d: %s","timestamp":%d}`, i,
			strings.Repeat("please look at the failing test and fix it ", 22), 1771237265000+i))
	}
	return json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":"%s","thinkingSignature":"EqQBCkYIBxgCKkB"},`+
		`{"type":"text","text":"%s"},{"type":"toolCall","id":"toolu_%d","name":"read","arguments":{"path":"src/a.ts"}}],`+
		`"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1200,"output":80,"cacheRead":1000,"cacheWrite":0,`+
		`"totalTokens":2280,"cost":{"input":0.0036,"output":0.0012,"cacheRead":0.0003,"cacheWrite":0,"total":0.0051}},"stopReason":"toolUse","timestamp":%d}`,
		strings.Repeat("Let me read the file first. ", 12), strings.Repeat("I will change the loop. ", 12), i, 1771237265000+i))
}

// genStore writes n sessions of ~35 KB across 20 cwds: one made through
// the store, the others copies of it under new ids (as many agents leave
// behind). It returns every session file's path.
func genStore(root string, n int) ([]string, error) {
	st, err := fs.NewOS(root)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s, err := session.OpenStore(ctx, st)
	if err != nil {
		return nil, err
	}
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/work/p0", Title: "bench"})
	if err != nil {
		return nil, err
	}
	for i := range 32 {
		if err := h.AppendMessage(ctx, message(i)); err != nil {
			return nil, err
		}
	}
	if err := h.Close(ctx); err != nil {
		return nil, err
	}
	id := h.ID()
	file := filepath.Join(root, filepath.FromSlash(h.Path()))
	body, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	meta, err := os.ReadFile(filepath.Join(strings.TrimSuffix(file, ".jsonl"), session.MetaFile))
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(root, "sessions")); err != nil {
		return nil, err
	}
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	files := make([]string, 0, n)
	for i := range n {
		nid := fmt.Sprintf("%s%012x", id[:24], i)
		cwd := fmt.Sprintf("/work/p%d", i%20)
		at := created.Add(time.Duration(i) * time.Second)
		rel := session.SessionPath(cwd, at, nid)
		name := filepath.Join(root, filepath.FromSlash(rel))
		fb := bytes.ReplaceAll(body, []byte(id), []byte(nid))
		fb = bytes.Replace(fb, []byte(`"cwd":"/work/p0"`), []byte(fmt.Sprintf(`"cwd":%q`, cwd)), 1)
		var m session.Metadata
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, err
		}
		m.ID, m.Path, m.Cwd, m.ProjectHash, m.CreatedAt, m.UpdatedAt = nid, rel, cwd, session.EncodeCwd(cwd), at, at.Add(time.Minute)
		mb, _ := json.MarshalIndent(m, "", "  ")
		side := strings.TrimSuffix(name, ".jsonl")
		if err := os.MkdirAll(side, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(name, fb, 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(side, session.MetaFile), mb, 0o644); err != nil {
			return nil, err
		}
		mod := at.Add(time.Minute)
		if err := os.Chtimes(name, mod, mod); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	fmt.Printf("store: %d sessions, %d bytes each\n", n, len(body))
	return files, nil
}

// readAll reads every file whole, 16 at a time: the baseline of listing.
func readAll(files []string) (int64, error) {
	var wg sync.WaitGroup
	ch := make(chan string)
	var mu sync.Mutex
	var total int64
	var first error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range ch {
				b, err := os.ReadFile(f)
				mu.Lock()
				total += int64(len(b))
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		ch <- f
	}
	close(ch)
	wg.Wait()
	return total, first
}

// evict drops the files under root from the page cache (cold runs).
func evict(root string) {
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if f, err := os.Open(p); err == nil {
			fadviseDontNeed(int(f.Fd()))
			f.Close()
		}
		return nil
	})
}

func listStore(root string) (int, error) {
	st, err := fs.NewOS(root)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	s, err := session.OpenStore(ctx, st)
	if err != nil {
		return 0, err
	}
	k := 0
	for _, err := range s.List(ctx, "") {
		if err != nil {
			return 0, err
		}
		k++
	}
	return k, nil
}

func listRows(root string, files []string, rounds int) ([]row, error) {
	// The first listing builds the index from the files.
	t0 := time.Now()
	k, err := listStore(root)
	if err != nil {
		return nil, err
	}
	if k != len(files) {
		return nil, fmt.Errorf("listed %d sessions of %d", k, len(files))
	}
	first := time.Since(t0)
	var warm, warmBase, cold, coldBase []time.Duration
	for range rounds {
		t := time.Now()
		if _, err := listStore(root); err != nil {
			return nil, err
		}
		warm = append(warm, time.Since(t))
		t = time.Now()
		if _, err := readAll(files); err != nil {
			return nil, err
		}
		warmBase = append(warmBase, time.Since(t))
	}
	for range max(rounds/2, 2) {
		evict(root)
		t := time.Now()
		if _, err := listStore(root); err != nil {
			return nil, err
		}
		cold = append(cold, time.Since(t))
		evict(root)
		t = time.Now()
		if _, err := readAll(files); err != nil {
			return nil, err
		}
		coldBase = append(coldBase, time.Since(t))
	}
	rows := []row{
		{name: fmt.Sprintf("list %d sessions (warm) vs reading every file", len(files)), trove: median(warm), base: median(warmBase), goal: 10,
			note: fmt.Sprintf("the first listing, which builds the index from the files, took %s", round(first))},
		{name: fmt.Sprintf("list %d sessions (cold cache) vs reading every file", len(files)), trove: median(cold), base: median(coldBase), goal: 10},
	}
	// trove ls --all --json, end to end, built once.
	bin := filepath.Join(filepath.Dir(root), "trove")
	if err := trovebin.Build(bin); err != nil {
		return nil, fmt.Errorf("building trove: %w", err)
	}
	// ls keeps what it printed and prints it again while nothing changed
	// (sessions/.index/.ls-*): timed as it runs, then with the kept
	// listings removed before each run, as the first listing after a
	// change pays (that also writes the listing to keep).
	ls := func(forget, change bool) ([]time.Duration, error) {
		var ds []time.Duration
		for i := range rounds {
			if change {
				if err := changeOne(root, files[(i*7919)%len(files)], i); err != nil {
					return nil, err
				}
			}
			if forget {
				kept, _ := filepath.Glob(filepath.Join(root, "sessions", ".index", ".ls-*"))
				for _, f := range kept {
					if err := os.Remove(f); err != nil {
						return nil, err
					}
				}
			}
			t := time.Now()
			cmd := exec.Command(bin, "--store", root, "--json", "ls", "--all")
			out, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("trove ls: %w", err)
			}
			ds = append(ds, time.Since(t))
			var v []json.RawMessage
			if err := json.Unmarshal(out, &v); err != nil || len(v) != len(files) {
				return nil, fmt.Errorf("trove ls --json printed %d sessions (%v)", len(v), err)
			}
		}
		return ds, nil
	}
	cli, err := ls(false, false)
	if err != nil {
		return nil, err
	}
	fresh, err := ls(true, false)
	if err != nil {
		return nil, err
	}
	changed, err := ls(false, true)
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{name: "trove ls --all --json, end to end", trove: median(cli), base: median(warmBase), goal: 10},
		row{name: "the same, nothing kept to print again", trove: median(fresh), base: median(warmBase)},
		row{name: fmt.Sprintf("trove ls --all --json over %d sessions, first run after one session changed", len(files)),
			trove: median(changed), base: median(warmBase), goal: 10,
			note: "a message appended to a different session through the store before each run"})
	return rows, nil
}

// changeOne appends a message to the session in file through the store,
// as an agent resuming it would: its file, sidecar and directory change.
func changeOne(root, file string, i int) error {
	st, err := fs.NewOS(root)
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := session.OpenStore(ctx, st)
	if err != nil {
		return err
	}
	id := strings.TrimSuffix(filepath.Base(file), ".jsonl")
	id = id[strings.LastIndexByte(id, '_')+1:]
	h, err := s.Resume(ctx, id)
	if err != nil {
		return err
	}
	if err := h.AppendMessage(ctx, message(1000+2*i)); err != nil {
		h.Close(ctx)
		return err
	}
	return h.Close(ctx)
}

// appendRows compares durable appends through a session handle with
// writes and fsyncs of the same lines on a plain file.
func appendRows(dir string, rounds int) ([]row, error) {
	const msgs = 1024
	lines := make([][]byte, msgs)
	raw := make([]json.RawMessage, msgs)
	for i := range msgs {
		raw[i] = message(i)
		lines[i] = append([]byte(`{"type":"message","id":"0123abcd","parentId":"0123abce","timestamp":"2026-11-24T10:00:00.000Z","message":`), raw[i]...)
		lines[i] = append(lines[i], "}\n"...)
	}
	trove := func(every int) (time.Duration, error) {
		d, err := os.MkdirTemp(dir, "t")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(d)
		st, err := fs.NewOS(d)
		if err != nil {
			return 0, err
		}
		defer st.Close()
		s, err := session.OpenStore(ctx, st)
		if err != nil {
			return 0, err
		}
		h, err := s.Create(ctx, session.CreateOptions{Cwd: "/work/bench"})
		if err != nil {
			return 0, err
		}
		defer h.Close(ctx)
		t := time.Now()
		for i, m := range raw {
			if err := h.AppendMessage(ctx, m); err != nil {
				return 0, err
			}
			if (i+1)%every == 0 {
				if err := h.Flush(ctx); err != nil {
					return 0, err
				}
			}
		}
		return time.Since(t), nil
	}
	plain := func(every int) (time.Duration, error) {
		d, err := os.MkdirTemp(dir, "b")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(d)
		f, err := os.OpenFile(filepath.Join(d, "s.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		t := time.Now()
		for i, l := range lines {
			if _, err := f.Write(l); err != nil {
				return 0, err
			}
			if (i+1)%every == 0 {
				if err := f.Sync(); err != nil {
					return 0, err
				}
			}
		}
		return time.Since(t), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	measure := func(f func(int) (time.Duration, error), every int) (time.Duration, error) {
		var ds []time.Duration
		for range rounds {
			d, err := f(every)
			if err != nil {
				return 0, err
			}
			ds = append(ds, d)
		}
		return median(ds), nil
	}
	t64, err := measure(trove, 64)
	if err != nil {
		return nil, err
	}
	t1, err := measure(trove, 1)
	if err != nil {
		return nil, err
	}
	b1, err := measure(plain, 1)
	if err != nil {
		return nil, err
	}
	b64, err := measure(plain, 64)
	if err != nil {
		return nil, err
	}
	return []row{
		{name: fmt.Sprintf("%d messages, Flush every 64 vs write+fsync per message", msgs), trove: t64, base: b1, goal: 10},
		{name: "the same, vs raw write + fsync every 64", trove: t64, base: b64, goal: 0.67},
		{name: "Flush after every message vs write+fsync per message", trove: t1, base: b1, goal: 0.5},
	}, nil
}

// loadRow loads a 10,000-entry session for its context and compares with
// decoding its lines with encoding/json into structs.
func loadRow(dir string, rounds int) (row, error) {
	st, err := fs.NewOS(dir)
	if err != nil {
		return row{}, err
	}
	defer st.Close()
	s, err := session.OpenStore(ctx, st, session.WithInlineBlobs())
	if err != nil {
		return row{}, err
	}
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/work/load"})
	if err != nil {
		return row{}, err
	}
	for i := range 10000 {
		if err := h.AppendMessage(ctx, message(i)); err != nil {
			return row{}, err
		}
	}
	if err := h.Close(ctx); err != nil {
		return row{}, err
	}
	data, err := st.ReadFile(ctx, h.Path())
	if err != nil {
		return row{}, err
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	type entry struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		ParentID  *string         `json:"parentId"`
		Timestamp string          `json:"timestamp"`
		Message   json.RawMessage `json:"message"`
	}
	var tr, br []time.Duration
	var ta, ba float64
	for range rounds {
		a0 := allocs()
		t := time.Now()
		sess, err := tree.Open(ctx, st, h.Path(), tree.ReadOnly())
		if err != nil {
			return row{}, err
		}
		if got := len(sess.Context().Messages); got != 10000 {
			return row{}, fmt.Errorf("context of %d messages, want 10000", got)
		}
		tr = append(tr, time.Since(t))
		ta = float64(allocs() - a0)
		a0 = allocs()
		t = time.Now()
		raw, err := st.ReadFile(ctx, h.Path())
		if err != nil {
			return row{}, err
		}
		n := 0
		for l := range bytes.SplitSeq(bytes.TrimSpace(raw), []byte("\n")) {
			var e entry
			if err := json.Unmarshal(l, &e); err != nil {
				return row{}, err
			}
			n++
		}
		br = append(br, time.Since(t))
		ba = float64(allocs() - a0)
		if n != len(lines) {
			return row{}, fmt.Errorf("decoded %d lines of %d", n, len(lines))
		}
	}
	return row{name: "load a 10,000-entry session for its context vs encoding/json into structs", trove: median(tr), base: median(br), goal: 3,
		troveA: ta, baseA: ba, note: fmt.Sprintf("allocations: trove %.0f, encoding/json %.0f (goal: fewer)", ta, ba)}, nil
}

func allocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

func fadviseDontNeed(fd int) {
	const posixFadvDontneed = 4
	syscall.Syscall6(syscall.SYS_FADVISE64, uintptr(fd), 0, 0, posixFadvDontneed, 0, 0)
}
