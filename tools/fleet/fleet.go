package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trovekit/trove"
)

// Config says how big and how long a fleet run is.
type Config struct {
	Dir      string // the run's directory (journals, workspaces, engine data)
	Machines int    // at least 4: gc, mirror, list, and writers
	Kills    int
	MinGC    int // go on past Kills until this many GC runs
	// MinDone goes on past Kills until the records hold this many
	// mirror runs, listings and acknowledged writes each: a loaded
	// machine (the short run under make test) starts its machines slowly.
	MinDone int
	Every   time.Duration // mean time between kills
	Seed    uint64
	// Endpoint is the engine's S3 endpoint, http://127.0.0.1:PORT, with
	// the buckets "fleet" and "fleet-mirror" (CreateBuckets).
	Endpoint string
	// Faults puts a fault proxy (StartProxy) between the machines and the
	// engine, at FaultRate (default 0.03; requests time out after 5 s), and cuts one writer off for
	// 2*(LeaseTTL+Skew) every PartitionEvery (default 20s). The verifier
	// dials the engine directly.
	Faults                bool
	FaultRate             float64
	PartitionEvery        time.Duration
	LeaseTTL, Skew, Grace time.Duration
	MaxOffset             time.Duration // each machine's clock is off by up to this, either way
	Timeout               time.Duration // per bucket request
	// Pace is a writer's mean pause between operations (default 2s, 4s
	// under faults; <0:
	// none). Every GC reads every root, so the rate the bucket grows at
	// sets how long a GC run takes, and so how many finish in a run.
	Pace time.Duration
	// Child is the command that runs one machine: the MachineConfig as
	// JSON is appended as its last argument.
	Child []string
	Env   []string // the machines' environment; nil for this process's
	Log   io.Writer
}

func (c *Config) defaults() {
	if c.Machines < 4 {
		c.Machines = 4
	}
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 3 * time.Second
	}
	if c.Skew <= 0 {
		c.Skew = 6 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = 20 * time.Second
	}
	if c.MaxOffset == 0 {
		c.MaxOffset = 2 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Pace == 0 {
		c.Pace = 2 * time.Second
		if c.Faults {
			// Under faults each GC request costs more (the SDK backs off
			// about a second after each 5xx or reset): a slower-growing
			// bucket keeps GC runs short.
			c.Pace = 4 * time.Second
		}
	}
	if c.FaultRate <= 0 {
		c.FaultRate = 0.03
	}
	if c.Faults && c.Timeout > 5*time.Second {
		// Stalls are held past this: short, so that GC and mirror runs of
		// hundreds of requests still finish between kills; not so short that
		// a loaded machine's slow answers fail all of a call's attempts.
		c.Timeout = 5 * time.Second
	}
	if c.PartitionEvery <= 0 {
		c.PartitionEvery = 20 * time.Second
	}
}

func role(id int) string {
	switch id {
	case 0:
		return RoleGC
	case 1:
		return RoleMirror
	case 2:
		return RoleList
	}
	return RoleWriter
}

// proc is one running machine process.
type proc struct {
	cfg    MachineConfig
	cmd    *exec.Cmd
	exited chan struct{}
	stderr string // its stderr, a file beside the journals
}

// Run runs the fleet: starts every machine, kills one with SIGKILL every
// Every (on average) and restarts it, checking the killed machine's journal
// against the bucket after each kill, until Kills kills and MinGC GC runs;
// then kills them all and checks everything.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	res := Result{Machines: cfg.Machines}
	if err := os.MkdirAll(journalDir(cfg.Dir), 0o700); err != nil {
		return res, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xf1ee7))
	endpoint := func(int) string { return cfg.Endpoint }
	if cfg.Faults {
		px, err := StartProxy(cfg.Endpoint, cfg.Machines, cfg.FaultRate, cfg.Timeout*3/2, cfg.Seed)
		if err != nil {
			return res, err
		}
		defer px.Close()
		endpoint = px.Endpoint
		stop := make(chan struct{})
		defer close(stop)
		go partitions(px, cfg, rng.Uint64(), stop)
		defer func() { res.Faults = px.Counts() }()
	}
	procs := make([]*proc, cfg.Machines)
	start := func(id, inc int) error {
		mc := MachineConfig{ID: id, Inc: inc, Role: role(id), Machines: cfg.Machines,
			URL: StoreURL(endpoint(id), "fleet"), MirrorURL: StoreURL(endpoint(id), "fleet-mirror"),
			Dir: cfg.Dir, LeaseTTL: cfg.LeaseTTL, Skew: cfg.Skew, Grace: cfg.Grace, Timeout: cfg.Timeout, Pace: max(cfg.Pace, 0), Seed: cfg.Seed,
			Offset: time.Duration(rng.Int64N(int64(2*cfg.MaxOffset+1))) - cfg.MaxOffset}
		p, err := launch(cfg, mc)
		procs[id] = p
		return err
	}
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.kill()
			}
		}
	}()
	for id := range cfg.Machines {
		if err := start(id, 0); err != nil {
			return res, err
		}
	}
	log := slog.New(slog.DiscardHandler)
	vs, err := trove.Open(ctx, StoreURL(cfg.Endpoint, "fleet"), trove.WithLogger(log), trove.WithTimeout(cfg.Timeout))
	if err != nil {
		return res, err
	}
	defer vs.Close()
	v := &verifier{s: vs, dir: cfg.Dir, n: cfg.Machines}
	more := func() bool {
		if res.Kills < cfg.Kills {
			return true
		}
		recs, _ := readAll(journalDir(cfg.Dir), cfg.Machines)
		var done Result
		tally(recs, &done)
		return done.GC < cfg.MinGC || min(done.Mirrors, done.Lists, done.Acked) < cfg.MinDone
	}
	for more() {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(cfg.Every/2 + time.Duration(rng.Int64N(int64(cfg.Every)))):
		}
		// Writers are killed three times as often as the gc, mirror and
		// list machines, which need a while to finish a run at all.
		// The gc and mirror machines are killed only once their
		// incarnation finished a run: a GC reads every root, and on a
		// grown bucket takes longer than the time between kills.
		// With MinDone, a writer too is killed only once its incarnation
		// journaled something, so that a slow start still makes progress.
		id := 3 + rng.IntN(cfg.Machines-3)
		if r := rng.IntN(3); rng.IntN(4) == 0 && (r == 2 || finished(cfg.Dir, r, procs[r].cfg.Inc)) {
			id = r
		} else if cfg.MinDone > 0 && !journaled(cfg.Dir, id, procs[id].cfg.Inc) && !exited(procs[id]) {
			continue
		}
		p := procs[id]
		if exited(p) { // it stopped by itself: say why
			fmt.Fprintf(logOf(cfg), "machine %d exited by itself: %s\n", id, lastLines(p.stderr, 5))
		} else {
			p.kill()
			res.Kills++
		}
		recs, err := readAll(journalDir(cfg.Dir), cfg.Machines)
		if err != nil {
			return res, err
		}
		before, t0 := res, time.Now()
		if err := v.check(ctx, recs, map[incarnation]bool{{id, p.cfg.Inc}: true}, &res); err != nil {
			return res, fmt.Errorf("verify after kill %d: %w", res.Kills, err)
		}
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "kill %d: machine %d (%s, incarnation %d): lost +%d two_writers +%d live_blob_removed +%d listing +%d (checked in %v)\n",
				res.Kills, id, p.cfg.Role, p.cfg.Inc, res.Lost-before.Lost, res.TwoWriters-before.TwoWriters,
				res.LiveBlobRemoved-before.LiveBlobRemoved, res.ListingMismatches-before.ListingMismatches, time.Since(t0).Round(time.Millisecond))
		}
		if err := start(id, p.cfg.Inc+1); err != nil {
			return res, err
		}
	}
	for _, p := range procs {
		p.kill()
	}
	// The end: everything every machine acknowledged, once more, every
	// listing against the files, and fsck. Per-kill checks already
	// counted each killed machine's records: count afresh.
	recs, err := readAll(journalDir(cfg.Dir), cfg.Machines)
	if err != nil {
		return res, err
	}
	final := Result{Machines: res.Machines, Kills: res.Kills, Failures: res.Failures}
	if err := v.check(ctx, recs, nil, &final); err != nil {
		return final, err
	}
	final.Lost, final.TwoWriters = max(final.Lost, res.Lost), max(final.TwoWriters, res.TwoWriters)
	final.LiveBlobRemoved = max(final.LiveBlobRemoved, res.LiveBlobRemoved)
	final.ListingMismatches = max(final.ListingMismatches, res.ListingMismatches)
	if err := v.listing(ctx, recs, &final); err != nil {
		return final, err
	}
	if err := v.fsck(ctx, &final); err != nil {
		return final, err
	}
	tally(recs, &final)
	res = final
	return res, nil
}

// partitions cuts one writer off from the engine every cfg.PartitionEvery,
// for twice what its lease lives (TTL + skew): long enough that other
// machines may take its sessions over meanwhile.
func partitions(px *Proxy, cfg Config, seed uint64, stop chan struct{}) {
	rng := rand.New(rand.NewPCG(seed, 0xc07))
	for {
		select {
		case <-stop:
			return
		case <-time.After(cfg.PartitionEvery):
		}
		id := 3 + rng.IntN(cfg.Machines-3)
		px.Partition(id)
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "partition: machine %d cut off\n", id)
		}
		select {
		case <-stop:
			return
		case <-time.After(2 * (cfg.LeaseTTL + cfg.Skew)):
		}
		px.Heal()
	}
}

// finished reports whether incarnation inc of machine id journalled a
// GC or mirror run.
func finished(dir string, id, inc int) bool {
	return journaledOp(dir, id, inc, func(op string) bool { return op == "gc" || op == "mirror" })
}

func exited(p *proc) bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// journaled says whether incarnation inc of machine id wrote any record.
func journaled(dir string, id, inc int) bool {
	return journaledOp(dir, id, inc, func(string) bool { return true })
}

func journaledOp(dir string, id, inc int, match func(op string) bool) bool {
	rs, _ := readJournal(journalDir(dir), id)
	for _, r := range rs {
		if r.Inc == inc && match(r.Op) {
			return true
		}
	}
	return false
}

func stderrPath(dir string, id int) string {
	return filepath.Join(dir, fmt.Sprintf("m%02d.stderr", id))
}

func logOf(cfg Config) io.Writer {
	if cfg.Log != nil {
		return cfg.Log
	}
	return io.Discard
}

// lastLines is the end of a machine's stderr file.
func lastLines(name string, n int) string {
	b, _ := os.ReadFile(name)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

func launch(cfg Config, mc MachineConfig) (*proc, error) {
	arg, err := json.Marshal(mc)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Child[0], append(cfg.Child[1:], string(arg))...)
	cmd.Env = cfg.Env
	p := &proc{cfg: mc, cmd: cmd, exited: make(chan struct{}), stderr: stderrPath(cfg.Dir, mc.ID)}
	stderr, err := os.OpenFile(p.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start machine %d: %w", mc.ID, err)
	}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// kill ends the machine with SIGKILL and waits for it.
func (p *proc) kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// MachineMain is what a machine process runs: the MachineConfig in the
// last argument. It returns only on error.
func MachineMain(ctx context.Context, arg string) error {
	var mc MachineConfig
	if err := json.Unmarshal([]byte(arg), &mc); err != nil {
		return fmt.Errorf("machine config: %w", err)
	}
	if mc.URL == "" {
		return errors.New("machine config: no URL")
	}
	return Machine(ctx, mc, os.Stderr)
}
