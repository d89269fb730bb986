package watch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/trovekit/trove/importer"
	"github.com/trovekit/trove/session/tree"
)

// File is what the watcher reads a source through.
type File interface {
	io.ReaderAt
	io.Closer
}

// markLen is how many bytes at each end of what was read identify a
// source: a rewrite (compaction, a fork saved over the file) changes the
// bytes before the offset, and the watcher starts the source again.
const markLen = 512

// source is what the watcher knows of one session file. The exported
// fields are kept in the state file across runs.
type source struct {
	Path   string    `json:"path"`
	Format string    `json:"format,omitempty"`
	Offset int64     `json:"offset"` // bytes fed: through the last whole line
	Size   int64     `json:"size"`   // at the last look
	Mod    time.Time `json:"mod"`
	Head   string    `json:"head"` // sha256 of the first min(markLen, Offset) bytes
	Tail   string    `json:"tail"` // sha256 of the markLen bytes before Offset
	Gone   string    `json:"gone,omitempty"`

	f      *importer.Follower
	prev   *importer.Follower // one that failed: what it wrote is known
	from   int64              // where the last look read from; -1: it did not
	titled bool               // no subagent of it waits for a title (retitle)
}

func mark(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readAt reads length bytes at off; fewer at the end of the file.
func readAt(f File, off, length int64) ([]byte, error) {
	buf := make([]byte, length)
	n, err := f.ReadAt(buf, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return buf[:n], err
}

// same reports whether the first s.Offset bytes of f are those fed.
func (s *source) same(f File) (bool, error) {
	if s.Offset == 0 {
		return true, nil
	}
	head, err := readAt(f, 0, min(markLen, s.Offset))
	if err != nil {
		return false, err
	}
	from := max(0, s.Offset-markLen)
	tail, err := readAt(f, from, s.Offset-from)
	if err != nil {
		return false, err
	}
	return mark(head) == s.Head && mark(tail) == s.Tail, nil
}

// step brings the source's sessions up to date with the file: only the
// bytes after the offset are read while a Follower is live; a source
// started again (new, rewritten, or after a restart) is read whole once.
// A file whose size and time are as last seen is not read at all: a
// notification left over from a write already read costs a stat.
func (w *Watcher) step(ctx context.Context, s *source) (changed bool, err error) {
	s.from = -1
	fi, err := os.Stat(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		// Deleted or rotated away: what it brought stays in trove.
		s.Size = -1
		w.forget(s.Path)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if fi.Size() == s.Size && fi.ModTime().Equal(s.Mod) {
		return false, nil
	}
	if err := importer.NotRegular(s.Path, fi); err != nil {
		s.Size, s.Mod = fi.Size(), fi.ModTime() // said once, until it changes
		return false, err
	}
	f, err := w.open(s.Path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	ok, err := s.same(f)
	if err != nil {
		return false, err
	}
	// An append changes the size: the same size at a new time is an edit
	// in place (or a touch), which the marks at the ends may not see.
	inPlace := ok && fi.Size() == s.Size && s.Offset > 0
	if fi.Size() < s.Offset || !ok {
		*s = source{Path: s.Path, Format: s.Format} // rewritten: start again
	}
	s.Size, s.Mod = fi.Size(), fi.ModTime()
	if s.Gone != "" {
		return true, nil
	}
	if s.f == nil && s.Offset > 0 {
		if s.f, err = w.resume(ctx, s); err != nil {
			return false, err
		}
	}
	if inPlace && s.f != nil {
		// Read whole this once to tell (else an append after the edit
		// would be read on top of bytes that are no longer there).
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, s.Offset)); err != nil {
			return false, err
		}
		if !bytes.Equal(h.Sum(nil), s.f.Sum()) {
			*s = source{Path: s.Path, Format: s.Format, Size: fi.Size(), Mod: fi.ModTime()}
		}
	}
	from := s.Offset
	if s.f == nil {
		from = 0 // no parse state: read the file once to rebuild it
	}
	data, err := readAt(f, from, fi.Size()-from)
	if err != nil {
		return false, err
	}
	s.from = from
	i := bytes.LastIndexByte(data, '\n')
	if i < 0 {
		return true, nil // a torn line: it waits for its end
	}
	data = data[:i+1]
	if s.f == nil {
		if s.f, err = importer.Follow(w.st, s.Path, s.Format, data); err != nil {
			// Detection reads up to 20 lines: fewer (a big first line, a
			// file-history snapshot) do not make a source unknown yet.
			if errors.Is(err, importer.ErrUnknownSource) && (len(data) < 64<<10 || bytes.Count(data, []byte("\n")) < 20) {
				return true, nil // not enough lines yet to tell
			}
			s.Gone = err.Error()
			return true, err
		}
		s.f.UseIndex(w.index)
		if s.prev != nil {
			s.f.After(s.prev)
			s.prev = nil
		}
	}
	res, err := s.f.Feed(ctx, data)
	if err != nil {
		// Parse state may be partial: read the file again at the next
		// look; for lines trove cannot convert, once the file changes
		// (not at every rescan, an unchanged broken file read over and
		// over), else whether or not it does (a lock a hook's import
		// held, a store that failed).
		s.prev, s.f, s.Offset = s.f, nil, 0
		if !errors.Is(err, tree.ErrInvalid) && !errors.Is(err, importer.ErrNoSessionID) {
			s.Mod = time.Time{}
		}
		w.dropState(s.Path)
		return true, fmt.Errorf("watch %s: %w", s.Path, err)
	}
	for _, r := range res {
		if r.Imported {
			w.log.Debug("trove watch: imported", "source", r.Source, "session", r.SessionID, "messages", r.Messages)
		}
	}
	s.Offset = from + int64(len(data))
	if from < markLen {
		head, err := readAt(f, 0, min(markLen, s.Offset))
		if err != nil {
			return true, err
		}
		s.Head = mark(head)
	}
	s.Tail = mark(data[max(0, int64(len(data))-markLen):])
	if int64(len(data)) < markLen && from > 0 {
		tail, err := readAt(f, max(0, s.Offset-markLen), min(markLen, s.Offset))
		if err != nil {
			return true, err
		}
		s.Tail = mark(tail)
	}
	return true, w.keepState(s)
}
