package catalog

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/trovekit/trove/backend/fs"
)

// TestKilledWriter kills (SIGKILL) a process while it builds the catalog,
// after a random number of its transactions, several times over; the
// next process's search answers as a brute-force scan does.
func TestKilledWriter(t *testing.T) {
	if dir := os.Getenv("TROVE_CATALOG_CHILD"); dir != "" {
		killedChild(dir, os.Getenv("TROVE_CATALOG_STORE"))
		return
	}
	root := t.TempDir()
	st, err := fs.NewOS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(9, 9))
	var sessions []*fakeSession
	for i := range 120 {
		s := randomSession(r, i)
		sessions = append(sessions, s)
		writeFile(t, st, s.path(), s.bytes())
	}
	dir := t.TempDir()
	for round := range 4 {
		// Each round the child finds some files indexed, and more: half
		// the rounds add sessions, one rewrites a file.
		if round == 2 {
			s := sessions[3]
			s.lines = s.lines[:1]
			writeFile(t, st, s.path(), s.bytes())
		}
		if round%2 == 1 {
			for i := range 20 {
				s := randomSession(r, 1000+20*round+i)
				sessions = append(sessions, s)
				writeFile(t, st, s.path(), s.bytes())
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TROVE_CATALOG_CHILD="+dir, "TROVE_CATALOG_STORE="+root)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		for range 1 + r.IntN(6) {
			if !lines.Scan() {
				break // it finished first
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	c := openCatalog(t, dir, st)
	agreesWithBruteForce(t, c, sessions, r, 30, "after kills")
}

// killedChild builds the catalog in dir of the store at root, three files
// a transaction, printing a line after each.
func killedChild(dir, root string) {
	st, err := fs.NewOS(root)
	if err != nil {
		panic(err)
	}
	c, err := Open(context.Background(), dir, st, nil, func(c *config) {
		c.batchLen = 3
		c.afterBatch = func() { fmt.Println("batch") }
	})
	if err != nil {
		panic(err)
	}
	if err := c.Refresh(context.Background(), false); err != nil {
		panic(err)
	}
	c.Close()
}
