package trove

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/checkpoint"
)

// pinDir holds one empty file per pin: pins/<kind>/<id>.
const pinDir = "pins"

// Pin keeps an item whatever the retention policy. id is a session's or
// run's full id, or a checkpoint's <workspace key>/<name>.
func (s *Store) Pin(ctx context.Context, kind, id string) error {
	name, err := pinName(kind, id)
	if err != nil {
		return err
	}
	if err := s.st.EnsureDir(ctx, backend.Dir(name)); err != nil {
		return err
	}
	return s.st.WriteFile(ctx, name, nil)
}

// Unpin removes a pin; unpinning what is not pinned is no error.
func (s *Store) Unpin(ctx context.Context, kind, id string) error {
	name, err := pinName(kind, id)
	if err != nil {
		return err
	}
	if err := s.st.Unlink(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Pins lists the pins as "kind/id" keys.
func (s *Store) Pins(ctx context.Context) (map[string]bool, error) {
	pins := map[string]bool{}
	for fi, err := range backend.Walk(ctx, s.st, pinDir) {
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !fi.IsDir {
			pins[strings.TrimPrefix(fi.Name, pinDir+"/")] = true
		}
	}
	return pins, nil
}

func pinName(kind, id string) (string, error) {
	switch kind {
	case KindSession, KindRun, KindCheckpoint:
	default:
		return "", fmt.Errorf("pin: kind %q: %w", kind, fs.ErrInvalid)
	}
	name := pinDir + "/" + kind + "/" + id
	if err := backend.ValidPath(name); err != nil || id == "" || kind != KindCheckpoint && strings.Contains(id, "/") {
		return "", fmt.Errorf("pin: %s %q: %w", kind, id, backend.ErrInvalidPath)
	}
	return name, nil
}

// ErrAmbiguous is Lookup's error for a ref that names several items.
var ErrAmbiguous = errors.New("trove: ambiguous")

// Lookup finds what ref names, for pins: "kind/id" as Prune reports it,
// a session's or run's id or unique prefix, a checkpoint's <workspace
// key>/<name>, or a checkpoint name one workspace alone has.
func (s *Store) Lookup(ctx context.Context, ref string) (kind, id string, err error) {
	if k, rest, ok := strings.Cut(ref, "/"); ok && (k == KindSession || k == KindRun || k == KindCheckpoint) {
		kind, ref = k, rest
	}
	var found [][2]string
	// add notes a match; a miss is no error, another kind may match.
	add := func(k, id string, err error) error {
		switch {
		case err == nil:
			found = append(found, [2]string{k, id})
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, backend.ErrInvalidPath) && !errors.Is(err, fs.ErrInvalid):
			return err
		}
		return nil
	}
	if kind == "" || kind == KindSession {
		m, err := s.sessions.Metadata(ctx, ref)
		if err := add(KindSession, m.ID, err); err != nil {
			return "", "", err
		}
	}
	if kind == "" || kind == KindRun {
		info, err := s.runs.Find(ctx, ref)
		if err := add(KindRun, info.RunID, err); err != nil {
			return "", "", err
		}
	}
	if kind == "" || kind == KindCheckpoint {
		for name, err := range checkpoint.Manifests(ctx, s.st) {
			if err != nil {
				return "", "", err
			}
			rel, ok := strings.CutPrefix(strings.TrimSuffix(name, ".json"), "checkpoints/")
			if ok && (rel == ref || !strings.Contains(ref, "/") && backend.Base(rel) == ref) {
				found = append(found, [2]string{KindCheckpoint, rel})
			}
		}
	}
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("%q: no session, run or checkpoint: %w", ref, fs.ErrNotExist)
	case 1:
		return found[0][0], found[0][1], nil
	}
	return "", "", fmt.Errorf("%q names %d items (%s/%s, %s/%s...): %w", ref, len(found), found[0][0], found[0][1], found[1][0], found[1][1], ErrAmbiguous)
}
