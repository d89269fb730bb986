package importer

import (
	"context"
	"errors"
	"io/fs"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/session"
)

// SessionIndex maps the ids of the store's sessions to their files,
// listed once and kept up to date as an import run or a watcher's
// Followers write: finding each source's session by listing the store
// (Sessions().Find) made an import of n sessions into one cwd cost n
// listings of n files.
type SessionIndex struct {
	st    *trove.Store
	names map[string]string // nil until listed
}

// NewSessionIndex is an index of st's sessions, listed when first asked.
func NewSessionIndex(st *trove.Store) *SessionIndex { return &SessionIndex{st: st} }

// find is the file of the session id, as Sessions().Find(id) would give.
func (k *SessionIndex) find(ctx context.Context, id string) (string, error) {
	if k.names == nil {
		list, err := k.st.Sessions().Select(ctx, session.Query{})
		if err != nil {
			return "", err
		}
		k.names = make(map[string]string, len(list))
		for _, m := range list {
			k.names[m.ID] = m.Path
		}
	}
	if name, ok := k.names[id]; ok {
		return name, nil
	}
	return "", &fs.PathError{Op: "find", Path: id, Err: fs.ErrNotExist}
}

// fresh reports whether name is free: not listed, and not written since
// the listing by another process.
func (k *SessionIndex) fresh(ctx context.Context, id, name string) (bool, error) {
	if _, err := k.find(ctx, id); err == nil {
		return false, nil
	}
	switch _, err := k.st.Storage().Stat(ctx, name); {
	case err == nil:
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	default:
		return false, err
	}
}

// add records that the session id is now the file name.
func (k *SessionIndex) add(id, name string) {
	if k.names != nil {
		k.names[id] = name
	}
}
