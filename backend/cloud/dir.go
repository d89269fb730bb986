package cloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"syscall"

	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend"
)

// List returns dir's children with logical sizes.
func (s *bucketDriver) List(ctx context.Context, dir string) ([]backend.Info, error) {
	return s.list(ctx, dir)
}

func (s *bucketDriver) list(ctx context.Context, dir string) ([]backend.Info, error) {
	const op = "list"
	prefix := dirPrefix(dir)
	objs, err := s.listKeys(ctx, prefix, true)
	if err != nil {
		return nil, fail(op, dir, err)
	}
	var out []backend.Info
	seen := false
	dirs := map[string]bool{}
	for _, obj := range objs {
		if !obj.IsDir || !s.opts.emptyDirs {
			seen = true // hidden objects too: a marker keeps a directory
		}
		base := strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/")
		isDir := obj.IsDir
		if i := strings.IndexByte(base, '/'); i >= 0 {
			// A server that ignored the delimiter (gofakes3 does for a
			// "..." element) returned a deeper key: it names a directory.
			base, isDir = base[:i], true
		}
		if reserved(base) || base == "" {
			continue
		}
		if obj.IsDir && s.opts.emptyDirs {
			if ok, err := s.holdsKeys(ctx, obj.Key); err != nil {
				return nil, fail(op, dir, err)
			} else if !ok {
				continue // an emptied folder the engine still lists
			}
		}
		seen = true
		name := backend.Join(dir, base)
		if isDir {
			if dirs[name] {
				continue
			}
			dirs[name] = true
			out = append(out, backend.Info{Name: name, IsDir: true})
		} else {
			out = append(out, backend.Info{Name: name, Size: obj.Size, ModTime: obj.ModTime})
		}
	}
	if !seen && dir != "." {
		// Missing, or a file (which the contract lets us call missing):
		// telling them apart would cost a request of every listing of a
		// directory not made yet.
		return nil, backend.PathErr(op, dir, fs.ErrNotExist)
	}
	// Files being appended have segments: add their bytes to the sizes,
	// from one listing of every segment object below dir (the name's own
	// object is in the listing above, so a directory of directories has
	// none to look for).
	if !slices.ContainsFunc(out, func(fi backend.Info) bool { return !fi.IsDir }) {
		return out, nil
	}
	segs, err := s.dirSegments(ctx, dir)
	if err != nil {
		return nil, fail(op, dir, err)
	}
	for i, in := range out {
		objs := segs[in.Name]
		if in.IsDir || len(objs) == 0 {
			continue
		}
		l := layout{objs: objs}
		chain(&l, in.Name, in.Size, in.ModTime)
		out[i].Size, out[i].ModTime = l.size, l.mod
	}
	return out, nil
}

// holdsKeys reports whether any key starts with prefix.
func (s *bucketDriver) holdsKeys(ctx context.Context, prefix string) (bool, error) {
	page, _, err := s.b.ListPage(ctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: enc(prefix)})
	return len(page) > 0, err
}

// dirSegments lists the segment objects of the files directly in dir, by
// file name, each sorted: one listing (a page per thousand objects) for
// the whole directory, where a listing per file would cost a request each.
func (s *bucketDriver) dirSegments(ctx context.Context, dir string) (map[string][]obj, error) {
	prefix := segDir + "/" + dirPrefix(dir)
	los, err := s.listKeys(ctx, prefix, false)
	if err != nil {
		return nil, err
	}
	out := map[string][]obj{}
	for _, lo := range los {
		base, _, ok := strings.Cut(strings.TrimPrefix(lo.Key, prefix), "/"+backend.ReservedPrefix)
		if !ok || base == "" || strings.Contains(base, "/") {
			continue // a deeper directory's file
		}
		name := backend.Join(dir, base)
		if o, ok := parseObj(segPrefix(name), lo); ok {
			out[name] = append(out[name], o)
		}
	}
	for _, objs := range out {
		slices.SortFunc(objs, cmpObj)
	}
	return out, nil
}

// Mkdir makes dir exist; an empty one keeps a hidden marker object.
func (s *bucketDriver) Mkdir(ctx context.Context, dir string) error {
	const op = "mkdir"
	if err := s.checkParents(ctx, op, dir); err != nil {
		return err
	}
	if _, err := s.b.Attributes(ctx, enc(dir)); err == nil {
		return backend.PathErr(op, dir, fmt.Errorf("%w: a file has that name", fs.ErrExist))
	} else if !isNotFound(err) {
		return fail(op, dir, err)
	}
	exists, err := s.isDir(ctx, dir)
	if err != nil || exists {
		return fail(op, dir, err)
	}
	return fail(op, dir, s.put(ctx, dir+"/"+dirMarker, bytes.NewReader(nil)))
}

// checkParents makes sure no parent of name is a file. Parents known not
// to be files are cached: only a write can make one a file (see upload).
func (s *bucketDriver) checkParents(ctx context.Context, op, name string) error {
	for _, p := range backend.Parents(name) {
		s.mu.Lock()
		ok := s.notFile[p]
		s.mu.Unlock()
		if ok {
			continue
		}
		if _, err := s.b.Attributes(ctx, enc(p)); err == nil {
			return backend.PathErr(op, name, fmt.Errorf("%w: %s is a file", backend.ErrNotDir, p))
		} else if !isNotFound(err) {
			return fail(op, name, err)
		}
		s.mu.Lock()
		s.notFile[p] = true
		s.mu.Unlock()
	}
	return nil
}

// Unlink removes a file (base first, so a crash leaves only segments that
// nothing reads) or an empty directory. The parent directory stays.
func (s *bucketDriver) Unlink(ctx context.Context, name string) error {
	const op = "unlink"
	err := s.b.Delete(ctx, enc(name))
	switch {
	case err == nil:
		s.dropAll(ctx, name)
	case !isNotFound(err) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EISDIR):
		return fail(op, name, err)
	default:
		// Not a file (fileblob says ENOTEMPTY or EISDIR for a directory).
		page, err := s.listPage(ctx, name+"/", 2)
		if err != nil {
			return fail(op, name, err)
		}
		switch {
		case len(page) == 0:
			return backend.PathErr(op, name, fs.ErrNotExist)
		case len(page) > 1 || page[0].Key != name+"/"+dirMarker:
			return backend.PathErr(op, name, backend.ErrNotEmpty)
		}
		if err := s.b.Remove(ctx, enc(page[0].Key)); err != nil && !isNotFound(err) {
			return fail(op, name, err)
		}
	}
	return s.keepDir(ctx, op, backend.Dir(name))
}

// dropAll deletes the segment directory of a file whose name object is
// gone but for a claim above everything in it, which reads as nothing: a
// writer of the file still open fails at its next Sync on it or on its
// deleted last part, and a new file of the name numbers above it, so no
// segment of that writer can join the new file. A failed claim leaves
// everything (readers skip it; a new file hides it the same way).
func (s *bucketDriver) dropAll(ctx context.Context, name string) {
	objs, err := s.listObjs(ctx, name)
	if err != nil || len(objs) == 0 {
		return
	}
	from := objs[len(objs)-1].n + 1
	n, err := s.claim(ctx, name, from)
	if err != nil {
		s.log.Warn("trove/cloud: leaving an unlinked file's segments", "name", name, "err", err)
		return
	}
	// The numbers the claim found taken were a writer's late segments.
	for m := from; m < n; m++ {
		objs = append(objs, obj{n: m, key: objKey(name, m, kindSeg)})
	}
	s.drop(ctx, name, objs)
}

// keepDir puts a marker in dir when its last child is gone, as a file
// system keeps an emptied directory.
func (s *bucketDriver) keepDir(ctx context.Context, op, dir string) error {
	if dir == "." {
		return nil
	}
	exists, err := s.isDir(ctx, dir)
	if err != nil || exists {
		return fail(op, dir, err)
	}
	return fail(op, dir, s.put(ctx, dir+"/"+dirMarker, bytes.NewReader(nil)))
}
