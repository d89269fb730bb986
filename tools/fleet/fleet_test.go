package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A machine, or the S3 fake's server, is this test binary run again with
// FLEET_CHILD set.
func TestMain(m *testing.M) {
	switch os.Getenv("FLEET_CHILD") {
	case "machine":
		fmt.Fprintln(os.Stderr, "fleet machine:", MachineMain(context.Background(), os.Args[len(os.Args)-1]))
		os.Exit(1)
	case "s3":
		fmt.Fprintln(os.Stderr, "fleet s3:", ServeS3(os.Stdout))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestFleet is the short run of `make fleet` that `make test` runs: five
// machines (gc, mirror, list, two writers) on one bucket of SeaweedFS
// (waiting for weed while scripts/install-test-servers builds it; the S3
// fake in a server process of its own when weed cannot be had, and it says
// so), killed 8 times or more (until 2 GC runs, and a mirror run, a
// listing and a write acknowledged: under load machines start slowly).
func TestFleet(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e, err := StartEngine(EngineAuto, filepath.Join(dir, "engine"), []string{self, "-test.run=^$"}, append(os.Environ(), "FLEET_CHILD=s3"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if e.Name != EngineSeaweedFS {
		if os.Getenv("TROVE_REQUIRE_ALL") == "1" {
			t.Fatalf("weed cannot be had (scripts/install-test-servers --seaweedfs): the fleet ran on %s", e.Name)
		}
		t.Logf("weed cannot be had (scripts/install-test-servers --seaweedfs builds it): on %s instead", e.Name)
	}
	ctx := context.Background()
	if err := CreateBuckets(ctx, e.Endpoint, "fleet", "fleet-mirror"); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: filepath.Join(dir, "run"), Machines: 5, Kills: 8, MinGC: 2, MinDone: 1, Every: 700 * time.Millisecond, Pace: 200 * time.Millisecond, Seed: 3,
		Endpoint: e.Endpoint,
		Child:    []string{self, "-test.run=^$"}, Env: append(os.Environ(), "FLEET_CHILD=machine")}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	t.Log(res.Details())
	for _, f := range res.Failures {
		t.Error(f)
	}
	if !res.OK() || res.Kills < 8 || res.GC < 2 || res.Acked == 0 || res.Lists == 0 || res.Mirrors == 0 {
		t.Errorf("%s (%s)", res, res.Details())
	}
}
