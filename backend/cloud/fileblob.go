package cloud

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gocloud.dev/blob/fileblob"

	"github.com/trovekit/trove/backend"
)

// FileblobElemBytes is the longest element fileblob stores safely: 255 less
// what enc may add and fileblob's ".<16 hex>.tmp" temp suffix.
const FileblobElemBytes = 255 - len(backend.ReservedPrefix+"~") - len(".0123456789abcdef.tmp")

// OpenFileblob opens a Storage on a fileblob bucket in the directory dir,
// which must exist (as a bucket must): a missing one is an error wrapping
// fs.ErrNotExist. fileblob has three habits the Storage works around:
// its ".attrs" sidecar is written apart from the data (so none is written:
// trove keeps no attributes), its IfNotExist is a check then a rename (so
// conditional creates are serialised per key in this process; two processes
// appending to one file on fileblob are not detected), and it leaves emptied
// directories behind (so one in the way of a new file is removed).
func OpenFileblob(dir string, opts ...Option) (*Storage, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cloud: fileblob %s: %w", dir, err)
	}
	b, err := fileblob.OpenBucket(abs, &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		return nil, fmt.Errorf("cloud: fileblob %s: %w", dir, err)
	}
	all := append([]Option{WithLimits(backend.MaxNameBytes, FileblobElemBytes), func(o *options) { o.localDir = abs }}, opts...)
	return New(b, all...)
}

// clearWay removes the empty directories fileblob left where key is to be
// written; a directory holding any file stays, and the write then fails.
func (s *driver) clearWay(key string) {
	if s.opts.localDir == "" {
		return
	}
	path := filepath.Join(s.opts.localDir, filepath.FromSlash(enc(key)))
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
		return
	}
	var dirs []string
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return fs.ErrExist
		}
		dirs = append(dirs, p)
		return nil
	})
	if err != nil {
		return
	}
	for _, d := range slices.Backward(dirs) {
		if err := os.Remove(d); err != nil {
			return
		}
	}
}
