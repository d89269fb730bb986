package cas

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/walk"
)

// Root is a blob ref that something in the store holds, and the store path
// of the file holding it: what GC keeps and what fsck checks. Every layer
// that refers to blobs (session, checkpoint, runlog) lists its roots as an
// iter.Seq2[Root, error].
type Root struct {
	Ref  Ref
	File string
}

// RefsOf keeps only the refs of roots, the form GC takes.
func RefsOf(roots iter.Seq2[Root, error]) iter.Seq2[Ref, error] {
	return func(yield func(Ref, error) bool) {
		for r, err := range roots {
			if !yield(r.Ref, err) {
				return
			}
		}
	}
}

// refScanMax is the longest ref text: "blob:blake3:" and 64 hex digits.
const refScanMax = len("blob:blake3:") + 64

var refMark = []byte("blob:")

// ScanRefs calls yield for every well-formed blob ref written anywhere in
// r's bytes, in order, repeats included, until yield returns false. It
// knows no format: a ref in any JSON string, a text notice or a log line
// counts, which is what makes it safe for GC roots (a ref is never missed
// because its line is damaged or of a type this version does not know).
// A ref must end where the hex ends: "blob:sha256:<64 hex>x" is not one.
func ScanRefs(r io.Reader, yield func(Ref) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 0, 128<<10)
	chunk := make([]byte, 64<<10)
	eof := false
	for !eof {
		n, err := br.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if errors.Is(err, io.EOF) {
			eof = true
		} else if err != nil {
			return err
		}
		// Scan what cannot be the start of a ref cut by the chunk's end.
		limit := len(buf)
		if !eof {
			limit = max(0, len(buf)-refScanMax)
		}
		i := 0
		for i < limit {
			j := bytes.Index(buf[i:], refMark)
			if j < 0 || i+j >= limit {
				break
			}
			at := i + j
			if ref, n, ok := refAt(buf[at:]); ok {
				if !yield(ref) {
					return nil
				}
				i = at + n
				continue
			}
			i = at + len(refMark)
		}
		buf = append(buf[:0], buf[max(i, limit):]...)
	}
	return nil
}

// refAt parses a ref at the start of b, returning its length.
func refAt(b []byte) (Ref, int, bool) {
	for _, prefix := range []string{"blob:sha256:", "blob:blake3:"} {
		if !bytes.HasPrefix(b, []byte(prefix)) {
			continue
		}
		end := len(prefix) + 64
		if len(b) < end || (len(b) > end && isHexDigit(b[end])) {
			return Ref{}, 0, false
		}
		ref, err := ParseRef(string(b[:end]))
		if err != nil {
			return Ref{}, 0, false
		}
		return ref, end, true
	}
	return Ref{}, 0, false
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// ScanAhead is how many files ScanTree reads, and directories it lists,
// at once: on a bucket each is a round trip or more, and GC reads every
// file of every layer.
const ScanAhead = 16

// ScanTree lists the roots written in every file under dir of st (see
// ScanRefs), file by file in walk order, listing directories and reading
// files ScanAhead at a time (walk.Files). A missing dir has none.
func ScanTree(ctx context.Context, st backend.Storage, dir string) iter.Seq2[Root, error] {
	return func(yield func(Root, error) bool) {
		scan := func(ctx context.Context, fi backend.Info) fileRoots { return scanAll(ctx, st, fi.Name) }
		for f, err := range walk.Files(ctx, st, dir, ScanAhead, scan) {
			if err != nil {
				yield(Root{}, err)
				return
			}
			for _, r := range f.roots {
				if !yield(r, nil) {
					return
				}
			}
			if f.err != nil && !yield(Root{}, f.err) {
				return
			}
		}
	}
}

// fileRoots is what ScanFile yields for one file: its roots, then the
// error that ended them, if one did.
type fileRoots struct {
	roots []Root
	err   error
}

func scanAll(ctx context.Context, st backend.Storage, name string) fileRoots {
	var f fileRoots
	ScanFile(ctx, st, name, func(r Root, err error) bool {
		if err != nil {
			f.err = err
			return false
		}
		f.roots = append(f.roots, r)
		return true
	})
	return f
}

// ScanFile yields the roots written in the file name, as ScanTree does for
// each file; it returns false once yield has. A file removed meanwhile
// has none.
func ScanFile(ctx context.Context, st backend.Storage, name string, yield func(Root, error) bool) bool {
	rc, err := st.Open(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return yield(Root{}, err)
	}
	defer rc.Close()
	stopped := false
	err = ScanRefs(rc, func(r Ref) bool {
		if !yield(Root{Ref: r, File: name}, nil) {
			stopped = true
			return false
		}
		return true
	})
	if stopped {
		return false
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return yield(Root{}, err)
	}
	return true
}
