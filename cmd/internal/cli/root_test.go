package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every entry of topCommands must build the command it is named after, and
// together they must be the whole tree, or a command line would run a
// tree that lacks its command.
func TestTopCommandsNameWhatTheyBuild(t *testing.T) {
	var names []string
	for _, c := range topCommands() {
		if got := c.build(&app{}).Name(); got != c.name {
			t.Errorf("topCommands entry %q builds %q", c.name, got)
		}
		names = append(names, c.name)
	}
	var whole []string
	for _, c := range newRoot(&app{}).Commands() {
		if c.Name() != "completion" && c.Name() != "help" {
			whole = append(whole, c.Name())
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, whole) {
		t.Errorf("topCommands %v, the tree's commands %v", names, whole)
	}
}

func TestPickCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string
		only bool
	}{
		{nil, "", false},
		{[]string{"--version"}, "", true},
		{[]string{"--json", "--version"}, "", true},
		{[]string{"--version", "--help"}, "", false},
		{[]string{"-v"}, "", false},
		{[]string{"ls"}, "ls", true},
		{[]string{"--store", "ls", "show", "x"}, "show", true},
		{[]string{"--store=ls", "--json", "checkpoint", "ls"}, "checkpoint", true},
		{[]string{"--timeout", "5s", "--log-level", "debug", "hooks", "run"}, "hooks", true},
		{[]string{"--json", "search", "word"}, "search", true},
		{[]string{"--store"}, "", false},
		{[]string{"help", "ls"}, "", false},
		{[]string{"completion", "bash"}, "", false},
		{[]string{"__complete", "sh"}, "", false},
		{[]string{"lss"}, "", false},
		{[]string{"--bogus", "ls"}, "", false},
		{[]string{"-n", "3", "ls"}, "", false},
		{[]string{"--", "ls"}, "", false},
	} {
		name, only := pickCommand(newBareRoot(&app{}), tc.args)
		if name != tc.name || only != tc.only {
			t.Errorf("pickCommand(%q) = %q, %v; want %q, %v", tc.args, name, only, tc.name, tc.only)
		}
	}
}

// A command line run on the part of the tree it names must do and say
// what it does on the whole tree.
func TestPartialTreeRunsAsWhole(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-store")
	for _, args := range [][]string{
		{"--version"},
		{"--json", "--version"},
		{"ls", "--help"},
		{"--store", missing, "ls"},
		{"--store=" + missing, "--json", "show", "abc"},
		{"checkpoint", "--help"},
		{"checkpoint", "bogus"},
		{"checkpoint", "ls", "--bogus"},
		{"hooks"},
		{"--log-level", "loud", "search", "word"},
		{"search"},
		{"--timeout", "5s", "stats", "--by", "nothing", "--store", missing},
		{"ls", "--version"},
	} {
		run := func(whole bool) (int, string, string) {
			var out, errOut bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
			root := newRootFor(a, args)
			if whole {
				root = newRoot(a)
			}
			code := a.execute(context.Background(), root, args)
			return code, out.String(), errOut.String()
		}
		pc, pout, perr := run(false)
		wc, wout, werr := run(true)
		if pc != wc || pout != wout || perr != werr {
			t.Errorf("%q: part of the tree: %d %q %q; whole: %d %q %q", args, pc, pout, perr, wc, wout, werr)
		}
	}
}
