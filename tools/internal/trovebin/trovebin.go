// Package trovebin builds the trove command for the benchmarks as a user
// gets it from make install: static (no cgo), without BLAKE3 (Tags), and
// copied into place. A
// binary the linker wrote in place starts 0.5-1.5 ms slower here than a
// copy of the same bytes (perf stat -r 150 trove version: 4.5-4.9 ms
// against 3.7-4.0), which would tilt every whole-process row.
//
// Imports: the standard library only.
package trovebin

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Tags are the build tags make install builds trove with (the Makefile's
// TROVE_TAGS): cas without BLAKE3, which starts each process 0.3-0.8 ms
// sooner on a virtual machine (cas/blake3_absent.go).
const Tags = "trove_noblake3"

// Build builds ./cmd/trove (run from the module root) into dst.
func Build(dst string) error {
	tmp, err := os.MkdirTemp("", "trovebin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, "trove")
	cmd := exec.Command("go", "build", "-tags", Tags, "-o", built, "./cmd/trove")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/trove: %v\n%s", err, out)
	}
	return Copy(built, dst)
}

// Copy copies the executable src to dst, which must not exist.
func Copy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
