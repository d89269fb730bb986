//go:build unix

// Command cpbench compares trove checkpoints with a shadow git repository,
// the way Cline, Roo Code, Kilo and opencode snapshot a workspace, on the
// same generated tree: first snapshot, snapshot after changing 10 files,
// dry-run diff against the first snapshot, and rewind of those 10 files;
// then the store size after many checkpoints of a smaller tree with a few
// files edited between each, after trove's GC, against the git repository
// after git gc. It
// prints one table with the ratio git/trove per operation and the sizes.
//
// Usage: go run ./tools/cpbench [-files 5000] [-mb 100] [-rounds 5]
// [-size-files 2000] [-size-mb 40] [-size-checkpoints 100] [-cpuprofile f] [-v] [-keep]
// [-reuse dir] [-cli trove-binary [-ab second-binary]]
//
// -cli runs every trove operation as a whole process of that binary, as a
// hook would (`trove checkpoint create`, `diff`, `rewind --dry-run`,
// `rewind`), against git processes, alternated in one run; the rows then
// include process start, opening the store and loading its indexes. The
// binary runs from a fresh copy: one the Go linker just wrote starts 0.4 ms
// slower than a copy of itself here, and one run thousands of times up to
// 2 ms, which would decide an A/B comparison of two builds.
//
// -reuse runs the rounds again on the trees and stores of a directory a
// -keep run left, with no first snapshot: two builds run alternately on one
// tree differ by their code only (add -size-files 0 to skip the size
// scenario).
//
// -ab BINARY, with -cli, is a second build run in the same rounds: the
// snapshot and the rewind of each round by one build and the next round's
// by the other, the dry run and the diff by both, in turn, and a table of
// the two builds side by side: an A/B of two builds on one tree, in the
// same minute, is the only comparison finer than a shared machine's noise.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/internal/cputime"
	"github.com/trovekit/trove/tools/internal/trovebin"
)

func main() {
	files := flag.Int("files", 5000, "files in the tree")
	mb := flag.Int("mb", 100, "approximate total size in MB")
	rounds := flag.Int("rounds", 5, "rounds of change, snapshot, diff, rewind (the median is reported)")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	reuse := flag.String("reuse", "", "run the rounds again in a directory kept by -keep (no first snapshot): for A/B runs of two builds on one tree")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the trove operations")
	verbose := flag.Bool("v", false, "log trove's debug timings")
	cli := flag.String("cli", "", "trove binary: run each trove operation as a whole process of it")
	cliB := flag.String("ab", "", "with -cli, a second trove binary run in the same rounds (A/B of two builds)")
	var sz sizeConfig
	flag.IntVar(&sz.files, "size-files", 2000, "files in the tree of the size scenario (0: skip it)")
	flag.IntVar(&sz.mb, "size-mb", 40, "approximate total size of that tree in MB")
	flag.IntVar(&sz.checkpoints, "size-checkpoints", 100, "checkpoints taken in the size scenario, 10 text files edited between each")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			// Microseconds: the steps of one operation are a few ms apart.
			if a.Key == slog.TimeKey {
				return slog.String("t", a.Value.Time().Format("05.000000"))
			}
			return a
		}}))
	}
	if *cliB != "" && *cli == "" {
		fmt.Fprintln(os.Stderr, "cpbench: -ab needs -cli")
		os.Exit(2)
	}
	if err := run(*files, *mb, *rounds, *keep, *reuse, *cpuprofile, [2]string{*cli, *cliB}, logger, sz); err != nil {
		fmt.Fprintln(os.Stderr, "cpbench:", err)
		os.Exit(1)
	}
}

type result struct {
	name             string
	trove, git       []time.Duration // wall clock
	troveCPU, gitCPU []time.Duration // user + system time
	// troveB and troveBCPU are -ab's second build's.
	troveB, troveBCPU []time.Duration
	target            float64
}

func run(nfiles, mb, rounds int, keep bool, reuseDir, cpuprofile string, clis [2]string, logger *slog.Logger, sz sizeConfig) error {
	cli := clis[0]
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("git is needed for the comparison: %w", err)
	}
	tmp, err := reuseDir, error(nil)
	if tmp == "" {
		tmp, err = os.MkdirTemp("", "cpbench-")
	} else {
		keep = true
	}
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	}
	wsTrove := filepath.Join(tmp, "ws-trove")
	wsGit := filepath.Join(tmp, "ws-git")
	storeDir := filepath.Join(tmp, "store")
	gitDir := filepath.Join(tmp, "shadow.git")

	var paths []string
	var total int64
	if reuseDir == "" {
		fmt.Printf("building two identical trees of %d files, ~%d MB ...\n", nfiles, mb)
		paths, total, err = buildTree(wsTrove, nfiles, int64(mb)<<20)
		if err != nil {
			return err
		}
		if _, _, err := buildTree(wsGit, nfiles, int64(mb)<<20); err != nil {
			return err
		}
	} else if paths, total, err = listTree(wsTrove); err != nil {
		return err
	}
	fmt.Printf("tree: %d files, %.1f MB, %d CPUs, %s\n", len(paths), float64(total)/(1<<20), runtime.NumCPU(), runtime.Version())

	ctx := context.Background()
	store, err := fs.NewOS(storeDir)
	if err != nil {
		return err
	}
	defer store.Close()
	b := &bench{ctx: ctx, store: store, logger: logger, cli: cli, tmp: tmp, wsTrove: wsTrove, wsGit: wsGit, storeDir: storeDir, gitDir: gitDir}
	if cli != "" {
		dir, err := os.MkdirTemp("", "cpbench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		b.cli = filepath.Join(dir, "trove")
		if err = trovebin.Copy(cli, b.cli); err != nil {
			return err
		}
		if clis[1] != "" {
			b.cliB = filepath.Join(dir, "trove-b")
			if err = trovebin.Copy(clis[1], b.cliB); err != nil {
				return err
			}
		}
	}
	first := &result{name: "first snapshot", target: 5}
	incr := &result{name: "snapshot after changing 10 files", target: 2}
	diff := &result{name: "dry-run diff (10 files)", target: 1}
	cdiff := &result{name: "checkpoint diff (10 files)", target: 1}
	rewind := &result{name: "rewind of 10 files", target: 2}
	if cli != "" {
		rewind.target = 1.5 // issue 35: a whole process against git checkout
	}
	if reuseDir == "" {
		if err := b.firstSnapshot(first); err != nil {
			return err
		}
	}

	// The profile covers the incremental operations, where the stat pass,
	// not hashing, should dominate.
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rng := rand.New(rand.NewPCG(7, 7))
	base := 0
	if reuseDir != "" {
		base = int(time.Now().UnixNano() % 1e9)
		rng = rand.New(rand.NewPCG(uint64(base), 7))
	}
	for r := range rounds {
		changed := pickText(paths, rng, 10)
		if err := b.round(changed, base+r, incr, diff, cdiff, rewind); err != nil {
			return err
		}
	}
	return printResults(ctx, []*result{first, incr, diff, cdiff, rewind}, rounds, clis, filepath.Join(tmp, "size"), sz, logger)
}

// bench is one run's two workspaces, trove's store and git's shadow
// repository. A fresh Manager for every operation, as a fresh git process:
// nothing is carried over in memory, the stat cache is read from the store.
type bench struct {
	ctx                                   context.Context
	store                                 *fs.Storage
	logger                                *slog.Logger
	cli                                   string // the trove binary of -cli, or ""
	cliB                                  string // -ab's, or ""
	cur                                   int    // the build the next troveCLI runs: 0 cli, 1 cliB
	tmp, wsTrove, wsGit, storeDir, gitDir string
	lastCPU                               time.Duration // CPU time of the last operation
	cliOut                                bytes.Buffer  // standard output of the last troveCLI
}

// troveOp runs f on a fresh Manager. Each operation runs under a pprof
// label (op=<row>), so -cpuprofile can be read per row: go tool pprof
// -tagfocus op=diff ...
func (b *bench) troveOp(name string, f func(m *checkpoint.Manager) error) (d time.Duration, err error) {
	c0 := cputime.Self()
	defer func() { b.lastCPU = cputime.Self() - c0 }()
	pprof.Do(b.ctx, pprof.Labels("op", name), func(ctx context.Context) {
		t0 := time.Now()
		var m *checkpoint.Manager
		m, err = checkpoint.OpenDir(ctx, b.store, b.wsTrove, checkpoint.WithLogger(b.logger))
		if err != nil {
			return
		}
		err = f(m)
		m.Close()
		d = time.Since(t0)
	})
	return d, err
}

// troveCLI runs one trove command as its own process (-cli); its
// standard output is left in cliOut for the checks.
func (b *bench) troveCLI(args ...string) (time.Duration, error) {
	bin := b.cli
	if b.cur == 1 {
		bin = b.cliB
	}
	cmd := exec.Command(bin, append([]string{"--store", b.storeDir, "checkpoint", "--dir", b.wsTrove}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+b.tmp, "XDG_CONFIG_HOME="+b.tmp, "XDG_DATA_HOME="+b.tmp)
	var errb bytes.Buffer
	b.cliOut.Reset()
	cmd.Stdout, cmd.Stderr = &b.cliOut, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("trove %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	b.lastCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return d, nil
}

// op runs a trove operation in this process, or with -cli as a process
// of the binary given.
func (b *bench) op(name string, args []string, f func(m *checkpoint.Manager) error) (time.Duration, error) {
	if b.cli != "" {
		return b.troveCLI(args...)
	}
	return b.troveOp(name, f)
}

// git runs one git command on the shadow repository.
func (b *bench) git(args ...string) error {
	cmd := exec.Command("git", append([]string{"--git-dir=" + b.gitDir, "--work-tree=" + b.wsGit}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.tmp, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	b.lastCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return nil
}

// gitOp times git commands run one after the other.
func (b *bench) gitOp(cmds ...[]string) (time.Duration, error) {
	b.lastCPU = 0
	t0 := time.Now()
	for _, c := range cmds {
		if err := b.git(c...); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// firstSnapshot makes the shadow repository and the first snapshot on both sides.
func (b *bench) firstSnapshot(first *result) error {
	if err := b.git("init", "-q"); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"core.autocrlf", "false"}, {"commit.gpgsign", "false"}, {"gc.auto", "0"}} {
		if err := b.git("config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	d, err := b.op("first", []string{"create", "--max-file-size", "0", "cp0"}, func(m *checkpoint.Manager) error { _, err := m.CreateTree(b.ctx, "cp0"); return err })
	if err != nil {
		return err
	}
	first.trove, first.troveCPU = append(first.trove, d), append(first.troveCPU, b.lastCPU)
	d, err = b.gitOp([]string{"add", "-A"}, []string{"commit", "-q", "--no-verify", "-m", "cp0"})
	if err != nil {
		return err
	}
	first.git, first.gitCPU = append(first.git, d), append(first.gitCPU, b.lastCPU)
	if err := b.git("tag", "cp0"); err != nil {
		return err
	}
	return nil
}

// builds returns the builds of round r, the one that snapshots and
// rewinds first: only the first without -ab, else both, in turn.
func (b *bench) builds(r int) []int {
	if b.cliB == "" {
		return []int{0}
	}
	return []int{r % 2, 1 - r%2}
}

// add records the last operation's times in res, as the build that ran it.
func (b *bench) add(res *result, d time.Duration) {
	if b.cur == 1 {
		res.troveB, res.troveBCPU = append(res.troveB, d), append(res.troveBCPU, b.lastCPU)
		return
	}
	res.trove, res.troveCPU = append(res.trove, d), append(res.troveCPU, b.lastCPU)
}

// dryRun times a dry-run rewind to cp0, as build b.cur, and checks it saw
// the files changed.
func (b *bench) dryRun(ctx context.Context, diff *result, changed int) error {
	var troveRes *checkpoint.RewindFilesResult
	d, err := b.op("diff", []string{"rewind", "--dry-run", "--json", "cp0"}, func(m *checkpoint.Manager) error {
		var err error
		troveRes, err = m.Rewind(ctx, "cp0", true)
		return err
	})
	if err != nil {
		return err
	}
	if b.cli != "" {
		var out struct { // the CLI's JSON names
			Files []string `json:"files_changed"`
		}
		if err := json.Unmarshal(b.cliOut.Bytes(), &out); err != nil {
			return fmt.Errorf("trove rewind --dry-run --json: %w", err)
		}
		troveRes = &checkpoint.RewindFilesResult{FilesChanged: out.Files}
	}
	if len(troveRes.FilesChanged) != changed {
		return fmt.Errorf("trove dry run saw %d changed files, want %d", len(troveRes.FilesChanged), changed)
	}
	b.add(diff, d)
	return nil
}

// round changes the files changed in both workspaces, then times a
// snapshot, a dry-run diff (and with -cli checkpoint diff) and a rewind
// to cp0 on both sides, and checks both trees are back to the original.
func (b *bench) round(changed []string, r int, incr, diff, cdiff, rewind *result) error {
	ctx := b.ctx
	for _, ws := range []string{b.wsTrove, b.wsGit} {
		if err := changeFiles(ws, changed, r); err != nil {
			return err
		}
	}
	id := fmt.Sprintf("cp%d", r+1)
	builds := b.builds(r)
	b.cur = builds[0] // the snapshot's and the rewind's build
	d, err := b.op("incremental", []string{"create", "--max-file-size", "0", id}, func(m *checkpoint.Manager) error { _, err := m.CreateTree(ctx, id); return err })
	if err != nil {
		return err
	}
	b.add(incr, d)
	d, err = b.gitOp([]string{"add", "-A"}, []string{"commit", "-q", "--no-verify", "-m", id})
	if err != nil {
		return err
	}
	incr.git, incr.gitCPU = append(incr.git, d), append(incr.gitCPU, b.lastCPU)

	for _, k := range builds {
		b.cur = k
		if err := b.dryRun(ctx, diff, len(changed)); err != nil {
			return err
		}
	}
	d, err = b.gitOp([]string{"diff", "--stat", "cp0"})
	if err != nil {
		return err
	}
	diff.git, diff.gitCPU = append(diff.git, d), append(diff.gitCPU, b.lastCPU)
	if b.cli != "" {
		for _, k := range builds {
			b.cur = k
			if d, err = b.troveCLI("diff", "cp0"); err != nil {
				return err
			}
			if !bytes.Contains(b.cliOut.Bytes(), fmt.Appendf(nil, "\n%d files, ", len(changed))) {
				return fmt.Errorf("trove checkpoint diff: want %d files, got %s", len(changed), b.cliOut.Bytes())
			}
			b.add(cdiff, d)
		}
		if d, err = b.gitOp([]string{"diff", "--stat", "cp0"}); err != nil {
			return err
		}
		cdiff.git, cdiff.gitCPU = append(cdiff.git, d), append(cdiff.gitCPU, b.lastCPU)
	}

	b.cur = builds[0]
	d, err = b.op("rewind", []string{"rewind", "cp0"}, func(m *checkpoint.Manager) error { _, err := m.Rewind(ctx, "cp0", false); return err })
	if err != nil {
		return err
	}
	b.add(rewind, d)
	d, err = b.gitOp([]string{"checkout", "-q", "-f", "cp0", "--", "."})
	if err != nil {
		return err
	}
	rewind.git, rewind.gitCPU = append(rewind.git, d), append(rewind.gitCPU, b.lastCPU)
	// Both trees must be back to the original.
	for _, p := range changed {
		t, _ := os.ReadFile(filepath.Join(b.wsTrove, p))
		g, _ := os.ReadFile(filepath.Join(b.wsGit, p))
		if !bytes.Equal(t, g) {
			return fmt.Errorf("after rewind %s differs between trove and git", p)
		}
	}
	return nil
}

// printResults prints the table of every result with a row, and the
// store size scenario (sz) when asked for.
func printResults(ctx context.Context, results []*result, rounds int, clis [2]string, sizeDir string, sz sizeConfig, logger *slog.Logger) error {
	cli := clis[0]
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\ttrove\tshadow git\tgit/trove\ttarget\ttrove CPU\tgit CPU\tCPU git/trove\t")
	for _, r := range results {
		if len(r.trove) == 0 {
			continue
		}
		t, g := median(r.trove), median(r.git)
		ratio := float64(g) / float64(t)
		target := "-"
		if r.target > 0 {
			mark := "met"
			if ratio < r.target {
				mark = "MISSED"
			}
			target = fmt.Sprintf(">= %gx %s", r.target, mark)
		}
		tc, gc := median(r.troveCPU), median(r.gitCPU)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1fx\t%s\t%s\t%s\t%.1fx\t\n", r.name, round(t), round(g), ratio, target, round(tc), round(gc), float64(gc)/float64(tc))
	}
	if sz.files > 0 {
		size, err := sizeScenario(ctx, sizeDir, sz, logger)
		if err != nil {
			return err
		}
		mark := "met"
		if size.trove > size.git {
			mark = "MISSED"
		}
		fmt.Fprintf(tw, "store size, %d checkpoints of %d files\t%s\t%s\t%.2fx\t<= 1x trove/git %s (%.2fx)\t\t\t\t\n",
			sz.checkpoints, size.files, mib(size.trove), mib(size.git), float64(size.git)/float64(size.trove), mark, float64(size.trove)/float64(size.git))
	}
	tw.Flush()
	fmt.Printf("\n(wall clock; median of %d rounds for the speed rows; CPU = user+system time of the same runs;\n", rounds)
	fmt.Printf(" git = git %s with --git-dir/--work-tree, including process start;\n", gitVersion())
	if cli != "" {
		fmt.Printf(" trove = a process of %s per operation (checkpoint create, rewind --dry-run, diff, rewind) on a local store;\n", cli)
	} else {
		fmt.Printf(" trove = a fresh checkpoint.Manager per operation on backend/fs, stat cache read from the store; rewind fsyncs;\n")
	}
	fmt.Printf(" store size = bytes of every file in the trove store after trove's GC and in the shadow repository after git gc)\n")
	if clis[1] != "" {
		printAB(results, clis)
	}
	return nil
}

// printAB prints -ab's table: each row's medians for the two builds.
func printAB(results []*result, clis [2]string) {
	fmt.Printf("\nA = %s, B = %s, in the same rounds (the snapshot and the rewind by each in turn, the dry run and the diff by both):\n", clis[0], clis[1])
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tA\tB\tB/A\tA CPU\tB CPU\tB/A CPU\truns each\t")
	for _, r := range results {
		if len(r.trove) == 0 || len(r.troveB) == 0 {
			continue
		}
		a, b := median(r.trove), median(r.troveB)
		ac, bc := median(r.troveCPU), median(r.troveBCPU)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\t%s\t%.3f\t%d\t\n", r.name, round(a), round(b), float64(b)/float64(a), round(ac), round(bc), float64(bc)/float64(ac), min(len(r.trove), len(r.troveB)))
	}
	tw.Flush()
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

func round(d time.Duration) string {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond).String()
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func gitVersion() string {
	out, err := exec.Command("git", "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
}
