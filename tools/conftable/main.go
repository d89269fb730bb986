// Command conftable turns `go test -json` output of the conformance matrix
// (tests named TestMatrix/<backend>/<suite>/...) into one line per backend and
// suite: "<backend> <suite> pass=N fail=N skip=N", each skip with its reason.
// It exits non-zero on any failure, on a package that failed to build or run,
// and when no matrix test ran at all.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type counts struct{ pass, fail, skip int }

type result struct {
	action string
	output []string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
}

func run(in io.Reader, out, errOut io.Writer) int {
	results := map[string]*result{}
	parents := map[string]bool{}
	var order []string
	pkgFailed := false
	var pkgOutput []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// Build errors arrive as plain text.
			pkgOutput = append(pkgOutput, sc.Text())
			continue
		}
		if ev.Test == "" {
			if ev.Action == "fail" {
				pkgFailed = true
			}
			if ev.Action == "output" {
				pkgOutput = append(pkgOutput, strings.TrimRight(ev.Output, "\n"))
			}
			continue
		}
		if !strings.HasPrefix(ev.Test, "TestMatrix/") {
			continue
		}
		r := results[ev.Test]
		if r == nil {
			r = &result{}
			results[ev.Test] = r
			order = append(order, ev.Test)
			// Every ancestor of a test is not a leaf.
			for i := len(ev.Test) - 1; i > 0; i-- {
				if ev.Test[i] == '/' {
					parents[ev.Test[:i]] = true
				}
			}
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			r.action = ev.Action
		case "output":
			line := strings.TrimRight(ev.Output, "\n")
			if !strings.HasPrefix(strings.TrimSpace(line), "=== ") {
				r.output = append(r.output, line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(errOut, "conftable: reading go test output: %v\n", err)
		return 1
	}

	table := map[string]*counts{}
	var keys []string
	skips := map[string][]string{}
	failed := 0
	for _, name := range order {
		if parents[name] {
			continue
		}
		r := results[name]
		parts := strings.SplitN(strings.TrimPrefix(name, "TestMatrix/"), "/", 3)
		key := parts[0] + " -"
		if len(parts) >= 2 {
			key = parts[0] + " " + parts[1]
		}
		c := table[key]
		if c == nil {
			c = &counts{}
			table[key] = c
			keys = append(keys, key)
		}
		switch r.action {
		case "pass":
			c.pass++
		case "skip":
			c.skip++
			skips[key] = append(skips[key], fmt.Sprintf("%s: %s", strings.TrimPrefix(name, "TestMatrix/"), skipReason(r.output)))
		default: // "fail", or no verdict because the run died
			c.fail++
			failed++
			fmt.Fprintf(errOut, "--- FAIL %s\n", name)
			for _, l := range r.output {
				fmt.Fprintln(errOut, l)
			}
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return backendRank(keys[i]) < backendRank(keys[j]) })
	for _, k := range keys {
		c := table[k]
		fmt.Fprintf(out, "%s pass=%d fail=%d skip=%d\n", k, c.pass, c.fail, c.skip)
		for _, s := range skips[k] {
			fmt.Fprintf(out, "    skip %s\n", s)
		}
	}
	switch {
	case len(keys) == 0:
		for _, l := range pkgOutput {
			fmt.Fprintln(errOut, l)
		}
		fmt.Fprintln(errOut, "conftable: no conformance test ran")
		return 1
	case failed > 0:
		fmt.Fprintf(errOut, "conftable: %d conformance cases failed\n", failed)
		return 1
	case pkgFailed:
		for _, l := range pkgOutput {
			fmt.Fprintln(errOut, l)
		}
		fmt.Fprintln(errOut, "conftable: the test package failed")
		return 1
	}
	return 0
}

// skipReason finds the message t.Skip printed ("file.go:12: reason").
func skipReason(lines []string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		if _, after, ok := strings.Cut(l, ".go:"); ok {
			if _, msg, ok := strings.Cut(after, ": "); ok {
				return msg
			}
		}
		return l
	}
	return "(no reason given)"
}

// backendRank keeps the table in the order the issue names the backends.
func backendRank(key string) int {
	name, suite, _ := strings.Cut(key, " ")
	backends := []string{"fs", "fs-memmapfs", "mem", "memblob", "fileblob", "s3", "gcs", "azure", "seaweedfs"}
	suites := []string{"-", "storage", "cas", "session", "store", "checkpoint", "runlog"}
	rank := len(backends) * len(suites)
	for i, b := range backends {
		if b == name {
			rank = i * len(suites)
		}
	}
	for j, s := range suites {
		if s == suite {
			return rank + j
		}
	}
	return rank + len(suites)
}
