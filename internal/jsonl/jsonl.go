// Package jsonl holds what every append-only JSONL file of trove shares
// (session trees, transcripts, run logs): reading lines with a torn last
// line told apart, and dropping such a tail before appending again.
//
// Imports: the standard library and backend.
package jsonl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"

	"github.com/trovekit/trove/backend"
)

// DropTornTail rewrites the file name without the bytes after its last
// newline (a line a killed writer never finished), atomically, and returns
// how many it dropped. A file ending in a newline, or missing, is left as is.
func DropTornTail(ctx context.Context, st backend.Storage, name string) (int, error) {
	fi, err := st.Stat(ctx, name)
	if err != nil || fi.Size == 0 {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	last, err := st.OpenRange(ctx, name, fi.Size-1, 1)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(last)
	last.Close()
	if err != nil || len(b) == 1 && b[0] == '\n' {
		return 0, err
	}
	data, err := st.ReadFile(ctx, name)
	if err != nil {
		return 0, err
	}
	cut := bytes.LastIndexByte(data, '\n') + 1
	if cut == len(data) {
		return 0, nil
	}
	return len(data) - cut, st.WriteFile(ctx, name, data[:cut])
}
