package cloud

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend"
)

// Kinds of object in a file's segment directory. At one number a segment
// sorts before the compaction base that holds it, that before a tier ending
// there, and all before a write base, which replaced everything below it.
const (
	kindSeg     = 0
	kindCompact = 'c'
	kindTier    = 't'
	kindWrite   = 'w'
)

// maxLevel is the highest tier level (one digit in the key).
const maxLevel = 9

// obj is one object of a file's segment directory. A tier holds the bytes
// of the numbers (from, n], folded from level-1 parts (segments are level
// 0).
type obj struct {
	n     uint64
	kind  byte
	key   string
	size  int64
	mod   time.Time
	level int
	from  uint64
}

func cmpObj(a, b obj) int {
	if c := cmp.Compare(a.n, b.n); c != 0 {
		return c
	}
	return cmp.Compare(a.kind, b.kind)
}

func objKey(name string, n uint64, kind byte) string {
	k := segPrefix(name) + fmt.Sprintf("%020d", n)
	if kind != kindSeg {
		k += string(kind)
	}
	return k
}

// tierKey names the tier of level holding the numbers (from, n].
func tierKey(name string, n uint64, level int, from uint64) string {
	return segPrefix(name) + fmt.Sprintf("%020d%c%d%020d", n, kindTier, level, from)
}

// parseObj reads a key of name's segment directory; ok is false for keys
// trove did not write.
func parseObj(prefix string, lo *blob.ListObject) (obj, bool) {
	rest, found := strings.CutPrefix(lo.Key, prefix)
	if !found || lo.IsDir || len(rest) < 20 {
		return obj{}, false
	}
	n, err := strconv.ParseUint(rest[:20], 10, 64)
	if err != nil {
		return obj{}, false
	}
	o := obj{n: n, key: lo.Key, size: lo.Size, mod: lo.ModTime}
	switch {
	case len(rest) == 20:
	case len(rest) == 21 && (rest[20] == kindCompact || rest[20] == kindWrite):
		o.kind = rest[20]
	case len(rest) == 42 && rest[20] == kindTier && '1' <= rest[21] && rest[21] <= '0'+maxLevel:
		from, err := strconv.ParseUint(rest[22:], 10, 64)
		if err != nil || from >= n {
			return obj{}, false
		}
		o.kind, o.level, o.from = kindTier, int(rest[21]-'0'), from
	default:
		return obj{}, false
	}
	return o, true
}

// part is one object of a logical file; size -1 is "to its end". end is
// the highest number it holds (0 for the name's own object) and level its
// tier level (0: a segment or a base).
type part struct {
	key   string
	size  int64
	end   uint64
	level int
}

// layout is a logical file as found at one moment: the object under its name
// alone (plain), or a base (that object or the newest base object) and the
// segments numbered above the base.
type layout struct {
	plain bool
	parts []part
	size  int64 // -1 while a plain file's size is unknown
	mod   time.Time
	base  obj    // the base object in use; kind 0 is the name itself
	last  uint64 // highest number listed
	end   uint64 // number the chain ends at: last, unless a gap stops it
	objs  []obj  // everything in the segment directory, sorted
	tiers []obj  // the tiers the chain goes through
}

// torn reports a chain that stops below the highest number listed. A file's
// numbers beyond its base are contiguous, each a segment or held by a tier,
// so a gap means a listing that saw a later object but missed an earlier
// one: fileblob reads a directory in hash order, so a segment created while
// it reads may be missed while a later one is seen, and a listing of pages
// is no snapshot either.
func (l *layout) torn() bool { return !l.plain && l.last > l.end }

// listKeys lists the keys below prefix (one level with delimited, the whole
// tree without), as names.
func (s *bucketDriver) listKeys(ctx context.Context, prefix string, delimited bool) ([]*blob.ListObject, error) {
	opts := &blob.ListOptions{Prefix: enc(prefix)}
	if delimited {
		opts.Delimiter = "/"
	}
	return relist(ctx, func() ([]*blob.ListObject, error) {
		var out []*blob.ListObject
		for token := blob.FirstPageToken; ; {
			page, next, err := s.b.ListPage(ctx, token, listPageSize, opts)
			if err != nil {
				return nil, err
			}
			out = append(out, decKeys(page)...)
			if token = next; len(token) == 0 {
				return out, nil
			}
		}
	})
}

// relist runs a listing again when it trips over an object vanishing under
// it (fileblob lists a directory, then fails to stat a file another call
// just removed). A sweep deletes objects one after another, so it waits a
// little longer each time (1 ms, doubling: half a second in all), where
// listing again at once could meet the same sweep every time.
func relist(ctx context.Context, list func() ([]*blob.ListObject, error)) ([]*blob.ListObject, error) {
	for try := 0; ; try++ {
		out, err := list()
		if err == nil || !isNotFound(err) || try >= maxRetries {
			return out, err
		}
		t := time.NewTimer(time.Millisecond << try)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// decKeys turns a page's keys into names.
func decKeys(page []*blob.ListObject) []*blob.ListObject {
	for _, lo := range page {
		lo.Key = dec(lo.Key)
	}
	return page
}

// listPageSize is the page of a whole listing: the most S3 and Azure send.
const listPageSize = 1000

// listPage lists at most n keys below prefix, as names.
func (s *bucketDriver) listPage(ctx context.Context, prefix string, n int) ([]*blob.ListObject, error) {
	return relist(ctx, func() ([]*blob.ListObject, error) {
		page, _, err := s.b.ListPage(ctx, blob.FirstPageToken, n, &blob.ListOptions{Prefix: enc(prefix)})
		return decKeys(page), err
	})
}

// enc maps a name to its key. An element ending in ".." is wrapped in the
// reserved prefix and a "~": fileblob turns "x../" into an escape instead of
// a directory, and gofakes3 ignores the delimiter after it. No name trove
// accepts has an element starting with the prefix, and none of its own ends
// in "..~", so dec undoes enc exactly.
func enc(name string) string {
	return mapElems(name, "..", func(e string) string { return backend.ReservedPrefix + e + "~" })
}

func dec(key string) string {
	return mapElems(key, "..~", func(e string) string {
		return strings.TrimSuffix(strings.TrimPrefix(e, backend.ReservedPrefix), "~")
	})
}

// mapElems applies f to every element of p that ends in suffix.
func mapElems(p, suffix string, f func(string) string) string {
	if !strings.Contains(p, "..") {
		return p
	}
	elems := strings.Split(p, "/")
	for i, e := range elems {
		if strings.HasSuffix(e, suffix) {
			elems[i] = f(e)
		}
	}
	return strings.Join(elems, "/")
}

// listObjs lists name's segment directory in order.
func (s *bucketDriver) listObjs(ctx context.Context, name string) ([]obj, error) {
	prefix := segPrefix(name)
	los, local, err := s.listLocal(name)
	if !local {
		los, err = s.listKeys(ctx, prefix, true)
	}
	if err != nil {
		return nil, err
	}
	var out []obj
	for _, lo := range los {
		if o, ok := parseObj(prefix, lo); ok {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, cmpObj)
	return out, nil
}

// resolve finds the objects of a logical file. A plain file costs one
// listing; its existence and size are left to the read (sized false) or
// asked for (sized true). The error is the driver's; the layout's objs are
// filled even when the file does not exist, so leftovers can be removed.
func (s *bucketDriver) resolve(ctx context.Context, name string, sized bool) (layout, error) {
	for try := 0; ; try++ {
		l, err := s.resolveOnce(ctx, name, sized)
		// A torn listing is listed again: what it missed was made while
		// it ran. Should the gap stay (folds of two writers racing), the
		// chain up to it is still every byte synced before the listing.
		if err != nil || !l.torn() || try >= tornRetries {
			return l, err
		}
	}
}

// tornRetries bounds how often resolve lists again after a torn listing.
const tornRetries = 3

func (s *bucketDriver) resolveOnce(ctx context.Context, name string, sized bool) (layout, error) {
	objs, err := s.listObjs(ctx, name)
	if err != nil {
		return layout{}, err
	}
	l := layout{objs: objs, size: -1}
	if len(objs) == 0 {
		l.plain = true
		l.parts = []part{{key: name, size: -1}}
		if !sized {
			return l, nil
		}
	}
	size, mod, err := s.head(ctx, name)
	if err != nil {
		return l, err
	}
	l.mod = mod
	if l.plain {
		l.size = size
		l.parts[0].size = size
		return l, nil
	}
	chain(&l, name, size, mod)
	return l, nil
}

// errNoObject is head's answer for a key no listing holds.
var errNoObject = fmt.Errorf("no such object: %w", fs.ErrNotExist)

// head describes the object under name as a listing of the directory
// does, so that Stat and List agree by construction: S3 answers a HEAD
// with whole seconds where its listing has milliseconds, and gofakes3
// stamps the HEAD's time when the upload starts but the listing's when it
// is stored (a Stat a second before List when an upload straddles one).
// So it lists one key: name sorts first among the keys it prefixes. On
// fileblob a listing walks the parent directory, and a HEAD reads the
// same stat of the same file: there it asks for the attributes.
func (s *bucketDriver) head(ctx context.Context, name string) (size int64, mod time.Time, err error) {
	if s.opts.localDir != "" {
		a, err := s.b.Attributes(ctx, enc(name))
		if err != nil {
			return 0, time.Time{}, err
		}
		return a.Size, a.ModTime, nil
	}
	page, err := s.listPage(ctx, name, 1)
	if err != nil {
		return 0, time.Time{}, err
	}
	if len(page) == 0 || page[0].Key != name || page[0].IsDir {
		return 0, time.Time{}, errNoObject
	}
	return page[0].Size, page[0].ModTime, nil
}

// chain fills the parts, size and time of a segmented file's layout from
// its objects (l.objs, sorted) and its name's own object.
func chain(l *layout, name string, size int64, mod time.Time) {
	objs := l.objs
	l.mod = mod
	l.last = objs[len(objs)-1].n
	l.base = obj{key: name, size: size, mod: mod}
	for _, o := range objs {
		if o.kind == kindCompact || o.kind == kindWrite {
			l.base = o
		}
	}
	l.parts = []part{{key: l.base.key, size: l.base.size, end: l.base.n}}
	l.size = l.base.size
	// The file is a chain from the base: at each number reached, the
	// widest tier starting there, else the next segment. Objects a tier
	// holds are skipped, whether or not they are deleted yet.
	widest := map[uint64]obj{}
	var segs []obj
	for _, o := range objs {
		switch {
		case o.kind == kindTier && o.n > widest[o.from].n:
			widest[o.from] = o
		case o.kind == kindSeg:
			segs = append(segs, o)
		}
	}
	// A missing number ends the chain, where it once skipped to the next
	// segment listed: a gap is a torn listing (see torn), and what lies
	// beyond it is not known to follow the chain's bytes.
	at := l.base.n
	for {
		o, ok := widest[at]
		if ok {
			l.tiers = append(l.tiers, o)
		} else {
			i, found := slices.BinarySearchFunc(segs, at+1, func(o obj, n uint64) int { return cmp.Compare(o.n, n) })
			if !found {
				break
			}
			o = segs[i]
		}
		l.parts = append(l.parts, part{key: o.key, size: o.size, end: o.n, level: o.level})
		at = o.n
		l.size += o.size
		if o.mod.After(l.mod) {
			l.mod = o.mod
		}
	}
	l.end = max(at, l.base.n)
}

// drop deletes objects a newer base made stale, in ascending order: a
// writer that finds its previous number gone knows its next may be hidden.
// A failure only leaves garbage that readers skip and the next replacement
// deletes.
func (s *bucketDriver) drop(ctx context.Context, name string, objs []obj) {
	for _, o := range objs {
		if err := s.b.Remove(ctx, enc(o.key)); err != nil && !isNotFound(err) {
			s.log.Warn("trove/cloud: leaving a stale object", "name", name, "key", o.key, "err", err)
		}
	}
}
