package trove

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/walk"
	"github.com/trovekit/trove/redact"
	"github.com/trovekit/trove/session"
)

// MirrorOption configures Mirror.
type MirrorOption func(*mirrorConfig)

type mirrorConfig struct {
	dryRun   bool
	progress func(MirrorAction)
	redact   *redact.Detector
}

// MirrorDryRun makes Mirror report what it would copy without writing.
func MirrorDryRun() MirrorOption { return func(c *mirrorConfig) { c.dryRun = true } }

// MirrorProgress calls f after each file is copied or skipped, one call at
// a time.
func MirrorProgress(f func(MirrorAction)) MirrorOption {
	return func(c *mirrorConfig) { c.progress = f }
}

// MirrorAction is what Mirror did with one file.
type MirrorAction struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Copied bool   `json:"copied"`
	Reason string `json:"reason"` // "missing", "differs", "identical", "present"
	// Done counts the files handled so far, this one included, of Total.
	Done  int `json:"-"`
	Total int `json:"-"`
}

// MirrorReport sums up a Mirror.
type MirrorReport struct {
	Copied      int   `json:"copied"`
	CopiedBytes int64 `json:"copied_bytes"`
	Skipped     int   `json:"skipped"`
	// Gone counts files removed from the source after Mirror listed it
	// (a GC, a fold or a delete running meanwhile): skipped, not errors.
	Gone int `json:"gone,omitempty"`
	// CheckpointsLeftOut counts the checkpoint files (manifests, stat
	// caches) a redacted Mirror did not copy: see MirrorRedact.
	CheckpointsLeftOut int  `json:"checkpoints_left_out,omitempty"`
	DryRun             bool `json:"dry_run"`
}

// Mirror copies the whole store in src to dst, incrementally: blob objects
// (content-addressed, immutable) present in dst with the same size are
// skipped unread; every other file is skipped when dst holds the same bytes
// and otherwise copied whole, eight at a time. Each destination file is
// written atomically, so an interrupted Mirror leaves dst valid and a rerun
// finishes it. Blobs go first, then pack indexes, then the rest, each group
// once the one before it is all in place, so a session file never lands
// before the blobs it refers to. MirrorProgress sees the files of a group
// in the order their copies end.
// Writer locks, leases, open markers, puts in progress (blobs/tmp) and the
// lock of the blob store's pack merges (blobs/autopack.lock) and a stat
// cache's writers' lock (checkpoints/.../stat.cache.lock) are not
// copied: they belong to live processes; nor are the listing index
// (sessions/.index) and the pack index cache (blobs/index.cache), caches of
// the source's file times.
//
// An encrypted source (a *crypt.Storage) mirrored to a destination that is
// not one is copied as it is stored: ciphertext under encrypted names, with
// its key objects, so the copy needs no key and opens with the source's
// passphrases. Mirrored to an encrypted destination (crypt.Init or Open on
// it), any source is re-encrypted with the destination's key.
func Mirror(ctx context.Context, src, dst backend.Storage, opts ...MirrorOption) (MirrorReport, error) {
	var cfg mirrorConfig
	for _, o := range opts {
		o(&cfg)
	}
	rep := MirrorReport{DryRun: cfg.dryRun}
	var copyFile mirrorCopy
	var err error
	if cfg.redact != nil {
		err = redactMode(ctx, src, dst)
	} else {
		copyFile, err = mirrorMode(ctx, src, dst, cfg.dryRun)
	}
	if err != nil {
		return rep, err
	}
	var files []backend.Info
	for info, err := range walk.Ahead(ctx, src, ".", mirrorInFlight) {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				break // an empty store
			}
			return rep, fmt.Errorf("mirror: list source: %w", err)
		}
		if info.IsDir || skipMirror(info.Name) {
			continue
		}
		files = append(files, info)
	}
	if len(files) == 0 {
		// Nothing to copy is almost surely a wrong source URL, not a store.
		return rep, fmt.Errorf("mirror: source holds no store: %w", fs.ErrNotExist)
	}
	if cfg.redact != nil {
		return mirrorRedacted(ctx, src, dst, files, cfg)
	}
	sort.SliceStable(files, func(i, j int) bool { return mirrorRank(files[i].Name) < mirrorRank(files[j].Name) })
	var mu sync.Mutex
	note := func(act MirrorAction) {
		mu.Lock()
		defer mu.Unlock()
		rep.note(act, rep.Copied+rep.Skipped+rep.Gone+1, len(files), cfg.progress)
	}
	for start := 0; start < len(files); {
		end := start + 1
		for end < len(files) && mirrorRank(files[end].Name) == mirrorRank(files[start].Name) {
			end++
		}
		if err := copyAll(ctx, files[start:end], copyFile, note); err != nil {
			return rep, err
		}
		start = end
	}
	return rep, nil
}

// mirrorInFlight is how many files Mirror copies, and directories it lists,
// at once. Over a bucket a copy or a listing is a request or a few, each
// waiting on the network: one at a time, a mirror of a store in use took
// 20-50 s behind the fleet's fault proxy.
const mirrorInFlight = 8

// copyAll copies files, of one rank, mirrorInFlight at a time, noting each
// as it ends, and returns once every copy it started has ended: so a rank
// starts only when the one before it is in place (a pack index never lands
// before its pack, nor a session before its blobs). The first error stops
// the copies not yet started and is returned.
func copyAll(ctx context.Context, files []backend.Info, copyFile mirrorCopy, note func(MirrorAction)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	slots := make(chan struct{}, mirrorInFlight)
	var wg sync.WaitGroup
	for _, f := range files {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			act, err := copyFile(ctx, f)
			if err != nil {
				cancel(err)
				return
			}
			note(act)
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// note counts act, the done-th file of total, and tells progress.
func (rep *MirrorReport) note(act MirrorAction, done, total int, progress func(MirrorAction)) {
	act.Done, act.Total = done, total
	switch {
	case act.Reason == "gone":
		rep.Gone++
	case act.Copied:
		rep.Copied++
		rep.CopiedBytes += act.Size
	default:
		rep.Skipped++
	}
	if progress != nil {
		progress(act)
	}
}

// skipMirror says what belongs to the source's live processes (writer
// locks, leases, open markers, puts in progress, the pack merges' lock, a
// stat cache's writers' lock) or is a cache of the
// source's own file times (the listing index, the pack index cache), which
// the destination builds for itself.
func skipMirror(name string) bool {
	b := backend.Base(name)
	return b == "writer.lock" || strings.HasPrefix(b, "writer.lease") || strings.HasSuffix(b, session.OpenSuffix) ||
		strings.HasPrefix(name, "blobs/tmp/") || strings.HasPrefix(name, session.IndexDir+"/") ||
		name == "blobs/index.cache" || name == "blobs/autopack.lock" ||
		isCheckpointFile(name) && strings.HasSuffix(b, ".lock") // a stat cache writers' lock
}

// mirrorRank orders blob objects and packs before pack indexes (a reader
// trusts an index's pack to exist) before everything else.
func mirrorRank(name string) int {
	if !strings.HasPrefix(name, "blobs/") {
		return 2
	}
	if strings.HasPrefix(name, "blobs/index/") {
		return 1
	}
	return 0
}

// mirrorFile copies f from src to dst unless dst has it; immutable files
// (blob objects) of the same size are taken as the same.
func mirrorFile(ctx context.Context, src, dst backend.Storage, f backend.Info, immutable, dry bool) (MirrorAction, error) {
	act := MirrorAction{Name: f.Name, Size: f.Size}
	di, err := dst.Stat(ctx, f.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		act.Reason = "missing"
	case err != nil:
		return act, fmt.Errorf("mirror: %w", err)
	case di.IsDir:
		return act, fmt.Errorf("mirror: %s: %w", f.Name, backend.ErrIsDir)
	case di.Size == f.Size && immutable:
		act.Reason = "present"
		return act, nil
	case di.Size == f.Size:
		a, err := src.ReadFile(ctx, f.Name)
		if errors.Is(err, fs.ErrNotExist) {
			act.Reason = "gone"
			return act, nil
		}
		if err != nil {
			return act, fmt.Errorf("mirror: %w", err)
		}
		b, err := dst.ReadFile(ctx, f.Name)
		if err != nil {
			return act, fmt.Errorf("mirror: %w", err)
		}
		if bytes.Equal(a, b) {
			act.Reason = "identical"
			return act, nil
		}
		act.Reason = "differs"
	default:
		act.Reason = "differs"
	}
	act.Copied = true
	if dry {
		return act, nil
	}
	r, err := src.Open(ctx, f.Name)
	if errors.Is(err, fs.ErrNotExist) {
		// Removed since the listing, by a GC, a fold or a delete of a
		// store in use: the next mirror sees what replaced it.
		act.Reason, act.Copied = "gone", false
		return act, nil
	}
	if err != nil {
		return act, fmt.Errorf("mirror: %w", err)
	}
	defer r.Close()
	n, err := dst.WriteFrom(ctx, f.Name, r)
	if err != nil {
		return act, fmt.Errorf("mirror: %w", err)
	}
	act.Size = n
	return act, nil
}
