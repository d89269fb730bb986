package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/trovekit/trove/importer"
)

// A source's conversion state (importer.Follower.State) is kept beside the
// state file, one file per source, written durably after each read: a
// watcher killed at any point and started again resumes each source from
// the offset its state names, reading only the bytes appended since
// (docs/live-capture.md).
type sourceState struct {
	Source   *source         `json:"source"`
	Follower json.RawMessage `json:"follower"`
}

// stateDir holds the sources' states ("" without a state file).
func (w *Watcher) stateDir() string {
	if w.stateFile == "" {
		return ""
	}
	return strings.TrimSuffix(w.stateFile, ".json") + ".sources"
}

func (w *Watcher) statePath(src string) string {
	sum := sha256.Sum256([]byte(src))
	return filepath.Join(w.stateDir(), hex.EncodeToString(sum[:12])+".json")
}

// keepState writes the state of s durably: to a temporary file, synced,
// renamed over the last one.
func (w *Watcher) keepState(s *source) error {
	if w.stateDir() == "" || s.f == nil {
		return nil
	}
	fst, err := s.f.State()
	if err != nil {
		return fmt.Errorf("watch %s: state: %w", s.Path, err)
	}
	data, err := json.Marshal(sourceState{Source: s, Follower: fst})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(w.stateDir(), 0o700); err != nil {
		return err
	}
	path := w.statePath(s.Path)
	tmp, err := os.CreateTemp(w.stateDir(), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("watch %s: keep state: %w", s.Path, err)
	}
	return nil
}

// dropState removes the state of the source at path, if any.
func (w *Watcher) dropState(path string) {
	if w.stateDir() == "" {
		return
	}
	if err := os.Remove(w.statePath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.log.Warn("trove watch: cannot remove state", "source", path, "err", err)
	}
}

// readState reads the kept state of the source at path.
func (w *Watcher) readState(path string) (*sourceState, error) {
	data, err := os.ReadFile(w.statePath(path))
	if err != nil {
		return nil, err
	}
	var ss sourceState
	if err := json.Unmarshal(data, &ss); err != nil || ss.Source == nil || ss.Source.Path != path {
		return nil, fmt.Errorf("watch %s: damaged state: %w", path, fs.ErrInvalid)
	}
	return &ss, nil
}

// staleTemp is the age past which a state's temporary file is a dead
// watcher's: a live one renames it within its write and sync.
const staleTemp = time.Hour

// loadStates takes each kept state's offsets over the state file's: a
// state is written after each read, the state file after each pass.
func (w *Watcher) loadStates() {
	ents, err := os.ReadDir(w.stateDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		name := filepath.Join(w.stateDir(), e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			// A watcher killed between creating and renaming it. One
			// younger than staleTemp may be another watcher's, at work.
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
				os.Remove(name)
			}
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		var ss struct {
			Source *source `json:"source"`
		}
		if json.Unmarshal(data, &ss) != nil || ss.Source == nil || w.statePath(ss.Source.Path) != filepath.Join(w.stateDir(), e.Name()) {
			continue
		}
		w.sources[ss.Source.Path] = ss.Source
		w.saved = false
	}
}

// resume is the Follower of s as its kept state has it, when that state
// is of the bytes s has read and the store is as it left it; nil to read
// the source from its start (after a crash between a write to the store
// and its state, say; the Follower that then reads it is told what this
// one wrote).
func (w *Watcher) resume(ctx context.Context, s *source) (*importer.Follower, error) {
	if w.stateDir() == "" {
		return nil, nil
	}
	ss, err := w.readState(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		w.log.Warn("trove watch: reading the source again", "source", s.Path, "err", err)
		return nil, nil
	}
	k := ss.Source
	if k.Offset != s.Offset || k.Head != s.Head || k.Tail != s.Tail {
		return nil, nil // of other bytes: the source was rewritten since
	}
	f, err := importer.Resume(w.st, ss.Follower)
	if err != nil {
		w.log.Warn("trove watch: reading the source again", "source", s.Path, "err", err)
		return nil, nil
	}
	if f.Size() != s.Offset {
		return nil, nil
	}
	ok, err := f.Verify(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.prev = f
		return nil, nil
	}
	f.UseIndex(w.index)
	return f, nil
}

// lockState takes the lock beside the state file at path, held while
// its sources are read: by Run for as long as it runs, by Once for its
// pass. Run (run) first takes a second lock held only by watchers, so a
// second watcher fails at once while one starting during a hook's pass
// waits for it; Once fails at once while anyone holds the first. The
// system drops both if the process dies.
func lockState(ctx context.Context, path string, run bool) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	try := func(name string) (*flock.Flock, error) {
		fl := flock.New(name)
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("watch: lock %s: %w", name, err)
		}
		if !ok {
			return nil, fmt.Errorf("%w (%s)", ErrRunning, path)
		}
		return fl, nil
	}
	if !run {
		fl, err := try(path + ".lock")
		if err != nil {
			return nil, err
		}
		return func() { fl.Unlock() }, nil
	}
	watcher, err := try(path + ".run.lock")
	if err != nil {
		return nil, err
	}
	fl := flock.New(path + ".lock")
	if ok, err := fl.TryLock(); err == nil && ok {
		return func() { fl.Unlock(); watcher.Unlock() }, nil
	}
	if _, err := fl.TryLockContext(ctx, 50*time.Millisecond); err != nil {
		watcher.Unlock()
		return nil, fmt.Errorf("watch: lock %s: %w", fl.Path(), err)
	}
	return func() { fl.Unlock(); watcher.Unlock() }, nil
}
