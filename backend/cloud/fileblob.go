package cloud

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"gocloud.dev/blob"
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
func (s *bucketDriver) clearWay(key string) {
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

// listLocal lists name's segment directory on fileblob from the disk
// (ok false where it cannot: not fileblob, or a name fileblob would
// escape). fileblob's listing fails when a file it read in the directory
// is gone before it looks at its size, as a sweep's deletes make happen
// again and again; here a file gone is one deleted, left out as a later
// listing would. Like fileblob's, the listing is no snapshot: see torn.
func (s *bucketDriver) listLocal(name string) (los []*blob.ListObject, ok bool, err error) {
	prefix := segPrefix(name)
	key := enc(prefix)
	if s.opts.localDir == "" || strings.Contains(key, "__0x") || strings.ContainsFunc(key, func(r rune) bool { return r < 32 }) {
		return nil, false, nil
	}
	dir := filepath.Join(s.opts.localDir, filepath.FromSlash(strings.TrimSuffix(key, backend.ReservedPrefix)))
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, true, nil
		}
		return nil, true, err
	}
	for _, e := range ents {
		rest, found := strings.CutPrefix(e.Name(), backend.ReservedPrefix)
		if !found || e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, true, err
		}
		los = append(los, &blob.ListObject{Key: prefix + rest, Size: fi.Size(), ModTime: fi.ModTime()})
	}
	return los, true, nil
}
