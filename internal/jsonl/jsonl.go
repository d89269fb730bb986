// Package jsonl holds what every append-only JSONL file of trove shares
// (session trees, transcripts, run logs): one way to read lines, with a
// torn last line (one a killed writer never finished) told apart from a
// damaged one, and one appender that drops such a tail before it appends,
// writes a batch with one write, syncs on demand and latches its first
// error.
//
// Imports: the standard library and backend.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/trovekit/trove/backend"
)

// ErrLineTooLong marks a line over the reader's bound: consumed and
// reported, never held whole.
var ErrLineTooLong = errors.New("line too long")

// Cut cuts the first line off data: the line without its newline, the rest,
// and whether the line ended with a newline (false only for a last line a
// writer may have torn).
func Cut(data []byte) (line, rest []byte, complete bool) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i], data[i+1:], true
	}
	return data, nil, false
}

// Reader splits a stream into lines without holding more than max bytes of
// one line.
type Reader struct {
	r   *bufio.Reader
	max int
}

// NewReader reads lines of at most max bytes from r.
func NewReader(r io.Reader, max int) *Reader { return newReaderSize(r, 64<<10, max) }

func newReaderSize(r io.Reader, size, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, size), max: max}
}

// Next returns the next line without its newline and whether it ended with
// one; io.EOF after the last. A line over max is consumed and reported as
// ErrLineTooLong.
func (lr *Reader) Next() (line []byte, complete bool, err error) {
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > lr.max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) == 0 && !tooLong:
			return nil, false, io.EOF
		case err == io.EOF:
			if tooLong {
				return nil, false, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, lr.max)
			}
			return line, false, nil
		case err != nil:
			return nil, false, err
		}
		if tooLong {
			return nil, true, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, lr.max)
		}
		return line[:len(line)-1], true, nil
	}
}

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

// Mode says how an Appender opens its file on the first write.
type Mode int

const (
	// Append appends after dropping a torn tail, if the file has one.
	Append Mode = iota
	// Create creates the file, which must not exist: a writer never takes
	// over a file it did not make.
	Create
	// AppendWhole appends to a file its owner has just read to its end
	// with a newline: no tail to check.
	AppendWhole
	// CreateFresh is Create of a name the owner made new (a random id):
	// the store need not look at its place (backend.WriterOptions.Fresh).
	CreateFresh
)

// Appender appends whole lines to one JSONL file, opened on the first
// write as its Mode says. The first error is latched: every later call
// returns it. An Appender is not safe for concurrent use; its owner
// serialises calls.
type Appender struct {
	st   backend.Storage
	name string
	mode Mode
	// Dropped, when set, hears how many bytes of a torn tail were dropped.
	Dropped func(n int)

	w      backend.Writer
	err    error
	closed bool
}

// NewAppender returns an appender to name.
func NewAppender(st backend.Storage, name string, mode Mode) *Appender {
	return &Appender{st: st, name: name, mode: mode}
}

// Err returns the latched error, or nil.
func (a *Appender) Err() error { return a.err }

// Opened reports whether the file has been opened for appending.
func (a *Appender) Opened() bool { return a.w != nil }

// latch records err as the appender's first error and returns the latched
// one.
func (a *Appender) latch(err error) error {
	if a.err == nil && err != nil {
		a.err = err
	}
	return a.err
}

// Write appends lines, each ending in a newline, with one write.
func (a *Appender) Write(ctx context.Context, lines []byte) error {
	if a.err != nil {
		return a.err
	}
	if a.closed {
		return backend.PathErr("append", a.name, fs.ErrClosed)
	}
	if a.w == nil {
		if err := a.open(ctx); err != nil {
			return a.latch(err)
		}
	}
	if _, err := a.w.Write(lines); err != nil {
		return a.latch(err)
	}
	return nil
}

func (a *Appender) open(ctx context.Context) error {
	if a.mode == Append {
		n, err := DropTornTail(ctx, a.st, a.name)
		if err != nil {
			return err
		}
		if n > 0 && a.Dropped != nil {
			a.Dropped(n)
		}
	}
	fresh := a.mode == CreateFresh
	w, err := a.st.OpenWriter(ctx, a.name, backend.WriterOptions{Exclusive: a.mode == Create || fresh, Fresh: fresh})
	if err != nil {
		return err
	}
	a.w, a.mode = w, AppendWhole
	return nil
}

// Sync makes what was written durable.
func (a *Appender) Sync() error {
	if a.err != nil || a.w == nil {
		return a.err
	}
	return a.latch(a.w.Sync())
}

// Close syncs and closes the file; it returns the latched error, if any.
// Closing twice is not an error.
func (a *Appender) Close() error {
	a.closed = true
	if a.w == nil {
		return a.err
	}
	err := a.Sync()
	if cerr := a.w.Close(); err == nil && cerr != nil {
		err = a.latch(cerr)
	}
	a.w = nil
	return err
}
