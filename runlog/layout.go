package runlog

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"
)

// Directories of the store layout (DESIGN section 9).
const (
	RunsDir  = "runs"
	StateDir = "state"
	runExt   = ".jsonl"
	stateExt = ".json"
)

// maxIDLen bounds run and session ids; UUIDs are 36 bytes.
const maxIDLen = 128

// validID reports whether id can name a file on every backend: 1 to 128
// ASCII letters, digits, '.', '_' or '-', not starting with '.'. UUIDs (what
// the run log spec uses) are; nothing that could escape a directory is.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

func checkID(what, id string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %s %q is not 1-%d letters, digits, '.', '_' or '-'", ErrInvalid, what, clip(id), maxIDLen)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// RunPath returns where the run runID started at startedAt lives:
// runs/YYYY/MM/DD/<run_id>.jsonl, the date in UTC.
func RunPath(runID string, startedAt time.Time) string {
	y, m, d := startedAt.UTC().Date()
	return fmt.Sprintf("%s/%04d/%02d/%02d/%s%s", RunsDir, y, int(m), d, runID, runExt)
}

// StatePath returns where the state snapshot of sessionID lives.
func StatePath(sessionID string) string {
	return StateDir + "/" + sessionID + stateExt
}

// runIDOf returns the run id a run file's name holds.
func runIDOf(name string) (string, bool) {
	base := name[strings.LastIndexByte(name, '/')+1:]
	id, ok := strings.CutSuffix(base, runExt)
	return id, ok && validID(id)
}

// NewID returns a random UUIDv4, the form the run log spec uses for run and session
// ids.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// digits reports whether s is n ASCII digits, as a date element must be.
func digits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < n; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
