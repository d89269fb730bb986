package sub

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/intercept"
)

// New returns a Storage rooted at dir inside s. Names given to it and names
// it returns are relative to dir. Closing it does not close s.
func New(s backend.Storage, dir string) (backend.Storage, error) {
	if err := backend.ValidPath(dir); err != nil {
		return nil, backend.PathErr("sub", dir, err)
	}
	b := &sub{dir: dir}
	return intercept.New(s, b.intercept), nil
}

type sub struct {
	dir    string
	closed atomic.Bool
}

// subOps are the calls that take names: the op their errors name, and
// whether the name may be a directory.
var subOps = map[string]struct {
	op  string
	dir bool
}{
	"EnsureDir": {"mkdir", true}, "Stat": {"stat", true}, "List": {"list", true},
	"ReadFile": {"read", false}, "ReadPrefix": {"read", false},
	"Open": {"open", false}, "OpenRange": {"open", false}, "OpenInfo": {"open", false}, "OpenWriter": {"open", false},
	"WriteFile": {"write", false}, "WriteFrom": {"write", false}, "CreateFile": {"write", false},
	"PutFile": {"write", false}, "RemoveFile": {"unlink", false},
	"Rename": {"rename", false}, "Unlink": {"unlink", false}, "Lock": {"lock", false},
	"Compact": {"compact", false},
}

// intercept maps names in and out: calls take the parent's names, and
// errors and infos come back in the sub's. Close makes the sub refuse
// further calls; the parent, and what was opened, stay open.
func (b *sub) intercept(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
	switch c.Op {
	case "Close":
		b.closed.Store(true)
		return nil
	case "Capabilities":
		err := next(ctx)
		// The name limit is shortened by the prefix.
		if c.Caps.MaxNameBytes > 0 {
			c.Caps.MaxNameBytes = max(c.Caps.MaxNameBytes-len(b.dir)-1, 0)
		}
		return err
	}
	o, named := subOps[c.Op]
	if !named {
		return b.err(next(ctx)) // the calls on writers, readers and locks; Crash
	}
	full, err := b.full(o.op, c.Name, o.dir)
	if err != nil {
		return err
	}
	if c.Op == "Rename" {
		if c.To, err = b.full(o.op, c.To, false); err != nil {
			return err
		}
	}
	c.Name = full
	c.MapInfo = func(i backend.Info) backend.Info { i.Name = b.rel(i.Name); return i }
	return b.err(next(ctx))
}

func (b *sub) full(op, name string, isDir bool) (string, error) {
	if b.closed.Load() {
		return "", backend.PathErr(op, name, backend.ErrClosed)
	}
	check := backend.ValidPath
	if isDir {
		check = backend.ValidDir
	}
	if err := check(name); err != nil {
		return "", backend.PathErr(op, name, err)
	}
	return backend.Join(b.dir, name), nil
}

// rel maps a name of the parent's back to ours.
func (b *sub) rel(name string) string {
	if name == b.dir {
		return "."
	}
	return strings.TrimPrefix(name, b.dir+"/")
}

func (b *sub) err(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: b.rel(pe.Path), Err: pe.Err}
	}
	return err
}
