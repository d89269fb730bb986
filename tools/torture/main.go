package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	n := flag.Int("n", 200, "how many children to kill")
	dir := flag.String("dir", "", "work directory (default: a temporary one, removed after)")
	seed := flag.Uint64("seed", 1, "random seed")
	verbose := flag.Bool("v", false, "a line per kill")
	child := flag.Bool("child", false, "run as a child (internal)")
	flag.Parse()
	ctx := context.Background()
	if *dir == "" {
		d, err := os.MkdirTemp("", "trove-torture-*")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	cfg := Config{Dir: filepath.Join(*dir, "store"), WS: filepath.Join(*dir, "ws"), Kills: *n, Seed: *seed}
	if *child {
		s, err := strconv.ParseUint(flag.Arg(0), 10, 64)
		if err == nil {
			err = Child(ctx, cfg, s, os.Stdout)
		}
		fmt.Fprintln(os.Stderr, "torture child:", err)
		os.Exit(1)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg.Child = []string{self, "-child", "-dir", *dir}
	if *verbose {
		cfg.Log = os.Stderr
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(1)
	}
	for _, f := range res.Failures {
		fmt.Fprintln(os.Stderr, "  ", f)
	}
	fmt.Println(res)
	if !res.OK() {
		os.Exit(1)
	}
}
