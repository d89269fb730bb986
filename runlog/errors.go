package runlog

import (
	"errors"
	"fmt"
	"io/fs"
)

// Sentinel errors, usable with errors.Is. A missing run or state file is
// fs.ErrNotExist. Errors about one file are *fs.PathError values naming it.
var (
	// ErrCorrupt marks a line that is not a record (not a JSON object, or a
	// known record type whose fields have the wrong JSON types), a file
	// without a header, or a state file that is not JSON. Readers skip such
	// lines and go on.
	ErrCorrupt = errors.New("corrupt run log")
	// ErrBlob marks a tool output whose blob could not be read back.
	ErrBlob = errors.New("tool output blob unavailable")
	// ErrOrder marks an append the writer refuses because it would break
	// the run log spec, section 4: a seq that does not increase, an llm.response
	// without its llm.request, a record after run.end.
	ErrOrder = errors.New("record out of order")
	// ErrInvalid marks an argument the caller got wrong: a run or session
	// id that is not a plain name, a record of another run, a second header.
	ErrInvalid = errors.New("invalid argument")
	// ErrAmbiguous marks a run id prefix that matches several runs.
	ErrAmbiguous = errors.New("ambiguous run id prefix")
	// ErrClosed is returned by a Writer after Close.
	ErrClosed = errors.New("run log closed")
)

// lineErr names the line of a run file an error is about.
func lineErr(path string, line int, err error) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("line %d: %w", line, err)}
}
