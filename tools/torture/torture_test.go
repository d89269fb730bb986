package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A child is this test binary run again with TORTURE_CHILD set.
func TestMain(m *testing.M) {
	if dir := os.Getenv("TORTURE_CHILD"); dir != "" {
		seed, err := strconv.ParseUint(os.Args[len(os.Args)-1], 10, 64)
		if err == nil {
			err = Child(context.Background(), Config{Dir: filepath.Join(dir, "store"), WS: filepath.Join(dir, "ws")}, seed, os.Stdout)
		}
		fmt.Fprintln(os.Stderr, "torture child:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestKills is the short run of `make torture` that `make test` runs.
func TestKills(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: filepath.Join(dir, "store"), WS: filepath.Join(dir, "ws"), Kills: 12, Seed: 42,
		Child: []string{self, "-test.run=^$"}}
	cfg.Env = append(os.Environ(), "TORTURE_CHILD="+dir)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	for _, f := range res.Failures {
		t.Error(f)
	}
	if !res.OK() || res.Acked == 0 || res.Rewinds == 0 {
		t.Errorf("torture: %s", res)
	}
}
