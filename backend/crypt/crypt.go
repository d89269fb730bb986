package crypt

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/trovekit/trove/backend"
)

// KeySize is the size of a master key.
const KeySize = 32

// Storage is a backend.Storage that keeps every file authenticated-
// encrypted, under an encrypted name, in an inner Storage. It has the
// inner store's fast paths (WriteOnce, WholeFile, Compacter) and passes
// them on.
type Storage struct {
	inner  backend.Storage
	s      *sealer
	n      *namer
	caps   backend.Capabilities
	appent func(name string) bool
	sides  sync.Map    // side objects of long names known to exist
	bufs   chan []byte // free sealed buffers of whole writes (see sealed)
	frames sync.Pool   // free frame buffers of readers (see frameBuf)
}

var (
	_ backend.Storage   = (*Storage)(nil)
	_ backend.WriteOnce = (*Storage)(nil)
	_ backend.WholeFile = (*Storage)(nil)
	_ backend.Compacter = (*Storage)(nil)
)

// Option tunes New, Open and Init.
type Option func(*options)

type options struct {
	appendable func(string) bool
	kdf        kdfParams
	random     bool // RandomSecret
}

// WithAppendable says which files are appended to by writers that stay
// open (default: names ending in ".jsonl", trove's logs). Their writers
// append one frame per Sync and their size is read from their last bytes;
// other files are written whole, their size follows from the object's, and
// a writer on them rewrites the file at each Sync.
func WithAppendable(f func(name string) bool) Option {
	return func(o *options) {
		if f != nil {
			o.appendable = f
		}
	}
}

// DefaultAppendable is the default of WithAppendable.
func DefaultAppendable(name string) bool { return strings.HasSuffix(name, ".jsonl") }

func newOptions(opts []Option) options {
	o := options{appendable: DefaultAppendable, kdf: defaultKDF}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// New returns the encrypted Storage over inner with the master key key
// (KeySize bytes). Most callers use Open or Init, which keep the key
// wrapped in the store. Close closes inner.
func New(inner backend.Storage, key []byte, opts ...Option) (*Storage, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("crypt: master key of %d bytes, want %d: %w", len(key), KeySize, fs.ErrInvalid)
	}
	o := newOptions(opts)
	sub := func(info string) []byte {
		k, err := hkdf.Key(sha256.New, key, nil, "trove/crypt/1 "+info, 32)
		if err != nil {
			panic(err) // only for lengths out of range
		}
		return k
	}
	s, err := newSealer(sub("content"))
	if err != nil {
		return nil, err
	}
	caps := inner.Capabilities()
	innerElem := caps.MaxElemBytes
	if innerElem <= 0 {
		innerElem = backend.MaxElemBytes
	}
	n, err := newNamer(sub("name-mac"), sub("name-enc"), maxPlainElem(innerElem))
	if err != nil {
		return nil, err
	}
	c := &Storage{inner: inner, s: s, n: n, appent: o.appendable, caps: caps, bufs: make(chan []byte, pooledBufs)}
	// Rename re-encrypts (content is bound to its name): a copy, then an
	// unlink of the source.
	c.caps.AtomicRename = false
	// Long elements are stored in the long form, which always fits.
	c.caps.MaxElemBytes = min(innerElem, backend.MaxElemBytes)
	innerName := c.caps.MaxNameBytes
	if innerName <= 0 {
		innerName = backend.MaxNameBytes
	}
	// Elements of ~100 bytes grow to ~185: half the inner limit leaves room
	// for a prefix (Sub). Names of short elements grow more; a name whose
	// stored form is too long is ErrInvalidPath.
	c.caps.MaxNameBytes = innerName / 2
	return c, nil
}

// Inner is the store the ciphertext lives in.
func (c *Storage) Inner() backend.Storage { return c.inner }

// StoredName is the name in the inner store of the file or directory name
// (a valid name; "." is the root).
func (c *Storage) StoredName(name string) string { return c.n.path(name) }

// Capabilities are the inner store's, but for Rename (never atomic) and the
// name limit (a stored element is 1.6 times as long, plus 26 bytes).
func (c *Storage) Capabilities() backend.Capabilities { return c.caps }

// check validates a logical name and returns its stored form.
func (c *Storage) check(op, name string, dir bool) (string, error) {
	chk := backend.ValidPath
	if dir {
		chk = backend.ValidDir
	}
	if err := chk(name); err != nil {
		return "", backend.PathErr(op, name, err)
	}
	return c.n.path(name), nil
}

// checkMaking is check for a call that may create name: the side objects
// of its long elements are written first.
func (c *Storage) checkMaking(ctx context.Context, op, name string, dir bool) (string, error) {
	sname, err := c.check(op, name, dir)
	if err != nil {
		return "", err
	}
	if err := c.ensureLong(ctx, name); err != nil {
		return "", fail(op, name, err)
	}
	return sname, nil
}

// fail names the logical name in an error of the inner store.
func fail(op, name string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return backend.PathErr(op, name, err)
}

func corrupt(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (c *Storage) EnsureDir(ctx context.Context, dir string) error {
	const op = "mkdir"
	sdir, err := c.checkMaking(ctx, op, dir, true)
	if err != nil {
		return err
	}
	return fail(op, dir, c.inner.EnsureDir(ctx, sdir))
}

func (c *Storage) Stat(ctx context.Context, name string) (backend.Info, error) {
	const op = "stat"
	sname, err := c.check(op, name, true)
	if err != nil {
		return backend.Info{}, err
	}
	info, err := c.inner.Stat(ctx, sname)
	if err != nil {
		return backend.Info{}, fail(op, name, err)
	}
	info.Name = name
	if !info.IsDir {
		if info.Size, err = c.size(ctx, name, sname, info.Size); err != nil {
			return backend.Info{}, fail(op, name, err)
		}
	}
	return info, nil
}

// tailBytes is how much of an appended file's end a size lookup reads: its
// last frame, mostly.
const tailBytes = 4 << 10

// size is the plaintext size of the file name stored as sname, of ct bytes.
func (c *Storage) size(ctx context.Context, name, sname string, ct int64) (int64, error) {
	if !c.appent(name) || ct == 0 {
		return wholeSize(ct), nil
	}
	end, _, ok, err := c.tail(ctx, sname, ct)
	if err != nil || ok {
		return end, err
	}
	// A torn append: the end of the last complete frame.
	data, err := c.inner.ReadFile(ctx, sname)
	if err != nil {
		return 0, err
	}
	end, _ = scan(data)
	return end, nil
}

// tail reads the trailer of an appended file of ct bytes: the plaintext
// end and where the last frame starts; ok is false for a torn end.
func (c *Storage) tail(ctx context.Context, sname string, ct int64) (end, start int64, ok bool, err error) {
	n := min(ct, tailBytes)
	rc, err := c.inner.OpenRange(ctx, sname, ct-n, n)
	if err != nil {
		return 0, 0, false, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return 0, 0, false, err
	}
	if int64(len(b)) != n {
		ct = ct - n + int64(len(b)) // the file changed: judge what was read
	}
	end, start, ok = trailerEnd(b, ct)
	return end, start, ok, nil
}

// scan walks the complete frames at the start of data by their headers and
// returns the plaintext end and the length of those frames.
func scan(data []byte) (end, n int64) {
	for {
		rest := data[n:]
		if len(rest) < Overhead {
			return end, n
		}
		kind, m := header(rest)
		if !validHeader(kind, m) || len(rest) < m+Overhead {
			return end, n
		}
		end += int64(m)
		n += int64(m + Overhead)
	}
}

// List decrypts the names of dir's children and yields them sorted, with
// their plaintext sizes. Objects whose names this key did not write (the
// key objects, foreign files) are left out.
func (c *Storage) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		const op = "list"
		sdir, err := c.check(op, dir, true)
		if err != nil {
			yield(backend.Info{}, err)
			return
		}
		var out []backend.Info
		for info, err := range c.inner.List(ctx, sdir) {
			if err != nil {
				yield(backend.Info{}, fail(op, dir, err))
				return
			}
			elem, ok, err := c.listName(ctx, dir, sdir, info.Base())
			if err != nil {
				yield(backend.Info{}, corrupt(op, dir, err))
				return
			}
			if !ok || backend.ValidPath(elem) != nil || strings.Contains(elem, "/") {
				continue
			}
			sname := info.Name
			info.Name = backend.Join(dir, elem)
			if !info.IsDir {
				if info.Size, err = c.size(ctx, info.Name, sname, info.Size); err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue // removed meanwhile
					}
					yield(backend.Info{}, fail(op, info.Name, err))
					return
				}
			}
			out = append(out, info)
		}
		slices.SortFunc(out, func(a, b backend.Info) int { return strings.Compare(a.Name, b.Name) })
		for _, in := range out {
			if err := backend.CtxErr(ctx, op, dir); err != nil {
				yield(backend.Info{}, err)
				return
			}
			if !yield(in, nil) {
				return
			}
		}
	}
}

func (c *Storage) Unlink(ctx context.Context, name string) error {
	const op = "unlink"
	sname, err := c.check(op, name, false)
	if err != nil {
		return err
	}
	if err := c.inner.Unlink(ctx, sname); err != nil {
		return fail(op, name, err)
	}
	c.dropLong(ctx, name)
	return nil
}

// RemoveFile is the inner store's whole-file removal.
func (c *Storage) RemoveFile(ctx context.Context, name string) error {
	const op = "unlink"
	sname, err := c.check(op, name, false)
	if err != nil {
		return err
	}
	if err := backend.RemoveFile(ctx, c.inner, sname); err != nil {
		return fail(op, name, err)
	}
	c.dropLong(ctx, name)
	return nil
}

// Rename re-encrypts from as to (each frame is bound to its name), then
// removes from: not atomic, as on a bucket.
func (c *Storage) Rename(ctx context.Context, from, to string) error {
	const op = "rename"
	sfrom, err := c.check(op, from, false)
	if err != nil {
		return err
	}
	sto, err := c.checkMaking(ctx, op, to, false)
	if err != nil {
		return err
	}
	rc, err := c.Open(ctx, from)
	if err != nil {
		return fail(op, from, err)
	}
	defer rc.Close()
	if from == to {
		return nil
	}
	if _, err := c.writeFrom(ctx, to, sto, rc); err != nil {
		return fail(op, to, err)
	}
	return fail(op, from, c.inner.Unlink(ctx, sfrom))
}

// Lock takes the inner store's lock of the stored name.
func (c *Storage) Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error) {
	const op = "lock"
	sname, err := c.checkMaking(ctx, op, name, false)
	if err != nil {
		return nil, err
	}
	u, err := c.inner.Lock(ctx, sname, wait)
	return u, fail(op, name, err)
}

// Compact is the inner store's.
func (c *Storage) Compact(ctx context.Context, name string) error {
	const op = "compact"
	sname, err := c.check(op, name, false)
	if err != nil {
		return err
	}
	return fail(op, name, backend.Compact(ctx, c.inner, sname))
}

// Crashable returns c as a backend.Crasher when the inner store can
// simulate a crash (tests of crash recovery on an encrypted store), else c.
// Storage itself has no Crash: layers take a Crasher as a store that can
// crash.
func (c *Storage) Crashable() backend.Storage {
	if cr, ok := c.inner.(backend.Crasher); ok && c.caps.Crash {
		return crasher{c, cr}
	}
	return c
}

type crasher struct {
	*Storage
	inner backend.Crasher
}

func (c crasher) Crash() { c.inner.Crash() }

// Close closes the inner store.
func (c *Storage) Close() error { return c.inner.Close() }
