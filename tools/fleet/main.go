package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	machines := flag.Int("machines", 8, "how many machines (at least 4: gc, mirror, list, writers)")
	kills := flag.Int("kills", 200, "how many SIGKILLs")
	gc := flag.Int("gc", 20, "go on until at least this many GC runs")
	every := flag.Duration("every", 0, "mean time between kills (default 2s, 4s with -faults)")
	pace := flag.Duration("pace", 0, "a writer's mean pause between operations (default 2s)")
	engine := flag.String("engine", EngineAuto, "auto, seaweedfs or gofakes3")
	faults := flag.Bool("faults", false, "a fault proxy between the machines and the engine")
	dir := flag.String("dir", "", "work directory (default: a temporary one, removed after)")
	seed := flag.Uint64("seed", 1, "random seed")
	verbose := flag.Bool("v", false, "a line per kill")
	machine := flag.String("machine", "", "run one machine (internal)")
	serveS3 := flag.Bool("serve-s3", false, "serve the S3 fake (internal)")
	flag.Parse()
	ctx := context.Background()
	switch {
	case *machine != "":
		fmt.Fprintln(os.Stderr, "fleet machine:", MachineMain(ctx, *machine))
		os.Exit(1)
	case *serveS3:
		fmt.Fprintln(os.Stderr, "fleet s3:", ServeS3(os.Stdout))
		os.Exit(1)
	}
	if err := run(ctx, *dir, *engine, Config{Machines: *machines, Kills: *kills, MinGC: *gc, Every: *every, Pace: *pace, Seed: *seed, Faults: *faults}, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, engine string, cfg Config, verbose bool) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "trove-fleet-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	e, err := StartEngine(engine, filepath.Join(dir, "engine"), []string{self, "-serve-s3"}, nil)
	if err != nil {
		return err
	}
	defer e.Stop()
	if err := CreateBuckets(ctx, e.Endpoint, "fleet", "fleet-mirror"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "fleet: %d machines on %s at %s (faults: %v)\n", cfg.Machines, e.Name, e.Endpoint, cfg.Faults)
	cfg.Dir = filepath.Join(dir, "run")
	cfg.Endpoint = e.Endpoint
	cfg.Child = []string{self, "-machine"}
	if verbose {
		cfg.Log = os.Stderr
	}
	res, err := Run(ctx, cfg)
	for _, f := range res.Failures {
		fmt.Fprintln(os.Stderr, "  ", f)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, res.Details())
	fmt.Println(res)
	if !res.OK() {
		os.Exit(1)
	}
	return nil
}
