package tree

import (
	"errors"
	"fmt"
)

// Sentinel errors, usable with errors.Is. Missing files and sessions are
// fs.ErrNotExist.
var (
	// ErrCorrupt marks a line that is not valid JSON (skipped on load).
	ErrCorrupt = errors.New("corrupt session line")
	// ErrNoHeader marks a file whose first parsed line is not a session
	// header. Such a file loads as empty and is never written.
	ErrNoHeader = errors.New("no valid session header")
	// ErrCycle marks parentId links that form a loop.
	ErrCycle = errors.New("parentId cycle")
	// ErrDuplicateID marks an id used by more than one entry; the later wins.
	ErrDuplicateID = errors.New("duplicate entry id")
	// ErrDanglingParent marks a parentId that names no entry.
	ErrDanglingParent = errors.New("parentId names no entry")
	// ErrBlob marks a blob ref that could not be resolved on load.
	ErrBlob = errors.New("blob unavailable")
	// ErrNotFound marks an entry id that is not in the session.
	ErrNotFound = errors.New("entry not found")
	// ErrReadOnly is returned by writes to a session opened read-only.
	ErrReadOnly = errors.New("session is read-only")
	// ErrClosed is returned by writes after Close.
	ErrClosed = errors.New("session closed")
	// ErrMigrated marks the report that an old file was migrated to v3
	// (and rewritten, unless opened read-only). It is news, not a failure.
	ErrMigrated = errors.New("migrated to version 3")
	// ErrExtraHeader marks a session header line after the first: kept in
	// the file, never an entry.
	ErrExtraHeader = errors.New("a later session header is not an entry")
	// ErrInvalid marks an argument the caller got wrong.
	ErrInvalid = errors.New("invalid argument")
)

// Problem is one thing a load found and worked around: a skipped line, a
// duplicate id, a cycle, an unresolved blob, a migration. Loads never fail
// on these; they report them.
type Problem struct {
	Line    int    // 1-based line in the file, 0 when not tied to a line
	EntryID string // the entry concerned, if any
	Err     error  // wraps one of the sentinels above
}

func (p Problem) Error() string {
	switch {
	case p.Line > 0 && p.EntryID != "":
		return fmt.Sprintf("line %d (entry %s): %v", p.Line, p.EntryID, p.Err)
	case p.Line > 0:
		return fmt.Sprintf("line %d: %v", p.Line, p.Err)
	case p.EntryID != "":
		return fmt.Sprintf("entry %s: %v", p.EntryID, p.Err)
	}
	return p.Err.Error()
}

func (p Problem) Unwrap() error { return p.Err }
