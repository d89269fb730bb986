package checkpoint_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	backendfs "github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

// modelFile is what the model says a workspace file holds.
type modelFile struct {
	data []byte
	mode os.FileMode
}

// modelState is a whole workspace as the model has it, by slash path.
type modelState map[string]modelFile

// TestModelSnapshotsAgreeWithWorkspace drives a real directory through
// random edits, additions, removals, mode changes and rewinds, with
// snapshots between them taken by a fresh Manager (a new command line
// process) or the last one, and checks every answer against the model:
// each snapshot holds exactly the files the workspace held, with their
// digests and modes; a diff against it right after finds nothing; a diff
// and a dry run against an earlier one name exactly the paths that
// differ. The stat cache (and its sidecar) only saves work: any entry it
// wrongly vouches for shows up here as a stale digest.
//
// On the real disk (the command line's way: OpenDir, the cache mapped)
// ctime catches any rewrite. In memory there is no ctime and the clock
// is the test's: there an edit that keeps a file's size and mtime, made
// right after the snapshot that hashed it in its own timestamp tick,
// must still be seen (the racy rule), whatever the sidecar kept.
func TestModelSnapshotsAgreeWithWorkspace(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("disk", seed), func(t *testing.T) { runModel(t, seed, 40, false) })
		t.Run(fmt.Sprint("memory", seed), func(t *testing.T) { runModel(t, seed, 40, true) })
	}
}

// modelEnv is the workspace a model run drives: on disk or in memory.
type modelEnv struct {
	fsys  afero.Fs
	dir   string // the workspace in fsys
	clock func() time.Time
	open  func() (*checkpoint.Manager, error)
}

func newModelEnv(t *testing.T, inMemory bool, now *time.Time) modelEnv {
	ctx := context.Background()
	if inMemory {
		fsys := afero.NewMemMapFs()
		store := mem.New()
		blobs, err := cas.Open(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		clock := func() time.Time { return *now }
		return modelEnv{fsys: fsys, dir: "/ws", clock: clock, open: func() (*checkpoint.Manager, error) {
			return checkpoint.New(store, blobs, checkpoint.FS(fsys, "/ws"), checkpoint.WithClock(clock))
		}}
	}
	root := t.TempDir()
	store, err := backendfs.NewOS(filepath.Join(root, "store"))
	if err != nil {
		t.Fatal(err)
	}
	wsDir := filepath.Join(root, "ws")
	return modelEnv{fsys: afero.NewOsFs(), dir: wsDir, clock: time.Now, open: func() (*checkpoint.Manager, error) {
		return checkpoint.OpenDir(ctx, store, wsDir, checkpoint.WithMappedStatCache())
	}}
}

func runModel(t *testing.T, seed uint64, steps int, inMemory bool) {
	ctx := context.Background()
	now := time.Now()
	env := newModelEnv(t, inMemory, &now)
	fsys, wsDir := env.fsys, env.dir
	rng := rand.New(rand.NewPCG(seed, 7))
	// Old, distinct mtimes: never racy, and never two edits of one file
	// with the same one. Now and then a file keeps the time of its write
	// (the clock's, in memory) instead: racy for the snapshot right after,
	// which sneaky (below) may then change behind its stat.
	old := now.Add(-time.Hour)
	tick := 0
	cur := modelState{}
	racyAt := map[string]time.Time{} // files written in this step, at the clock's time
	write := func(p string, data []byte, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(wsDir, filepath.FromSlash(p))
		if err := fsys.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fsys, full, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
		at := env.clock()
		if rng.IntN(10) < 7 {
			tick++
			at = old.Add(time.Duration(tick) * time.Millisecond)
		} else {
			racyAt[p] = at
		}
		if inMemory || !at.Equal(env.clock()) {
			if err := fsys.Chtimes(full, at, at); err != nil {
				t.Fatal(err)
			}
		}
		cur[p] = modelFile{data: data, mode: mode}
	}
	content := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefgh\n"[rng.IntN(9)]
		}
		return b
	}
	newPath := func() string {
		dir := fmt.Sprintf("d%d", rng.IntN(5))
		if rng.IntN(3) == 0 {
			dir += fmt.Sprintf("/e%d", rng.IntN(3))
		}
		return fmt.Sprintf("%s/f%d.txt", dir, rng.IntN(1000))
	}
	for range 40 {
		write(newPath(), content(rng.IntN(2000)), 0o644)
	}

	var last *checkpoint.Manager
	open := func() *checkpoint.Manager {
		t.Helper()
		if last != nil && rng.IntN(10) < 3 {
			return last
		}
		m, err := env.open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		last = m
		return m
	}
	// A files checkpoint (paths set) holds only its paths: absent ones
	// are not in its state.
	type snap struct {
		id    string
		paths []string
		state modelState
	}
	var snaps []snap
	for step := range steps {
		var touched []string
		if step > 0 {
			now = now.Add(time.Minute)
			if inMemory {
				touched = sneaky(t, rng, fsys, wsDir, cur, racyAt)
			}
			clear(racyAt)
			touched = append(touched, mutate(t, rng, fsys, wsDir, cur, write, content, newPath)...)
		}
		if step > 0 && rng.IntN(3) == 0 {
			// A files checkpoint (an undo, a hook's named paths) of what
			// was just changed hashes files outside any tree snapshot; its
			// stat cache entries must not pass for the last snapshot's.
			paths := append([]string{newPath()}, touched[:min(3, len(touched))]...)
			id := fmt.Sprintf("f%03d", step)
			if _, err := open().Create(ctx, id, paths); err != nil {
				t.Fatalf("step %d: create %v: %v", step, paths, err)
			}
			named := modelState{}
			for _, p := range paths {
				if f, ok := cur[p]; ok {
					named[p] = f
				}
			}
			snaps = append(snaps, snap{id, paths, named})
			checkManifest(ctx, t, open(), id, named)
			if rng.IntN(2) == 0 {
				mutate(t, rng, fsys, wsDir, cur, write, content, newPath)
			}
		}
		id := fmt.Sprintf("s%03d", step)
		if _, err := open().CreateTree(ctx, id); err != nil {
			t.Fatalf("step %d: create: %v", step, err)
		}
		snaps = append(snaps, snap{id, nil, maps.Clone(cur)})
		checkManifest(ctx, t, open(), id, cur)
		if d, err := open().Diff(ctx, id); err != nil || len(d.Files) != 0 {
			t.Fatalf("step %d: diff right after the snapshot: %+v, %v", step, d, err)
		}
		j := rng.IntN(len(snaps))
		now := cur
		if snaps[j].paths != nil {
			now = modelState{}
			for _, p := range snaps[j].paths {
				if f, ok := cur[p]; ok {
					now[p] = f
				}
			}
		}
		want := modelDiff(snaps[j].state, now)
		d, err := open().Diff(ctx, snaps[j].id)
		if err != nil {
			t.Fatalf("step %d: diff %s: %v", step, snaps[j].id, err)
		}
		got := map[string]string{}
		for _, f := range d.Files {
			got[f.Path] = f.Status
		}
		if !maps.Equal(got, want) {
			t.Fatalf("step %d: diff %s: got %v, want %v", step, snaps[j].id, got, want)
		}
		res, err := open().Rewind(ctx, snaps[j].id, true)
		if err != nil || !res.CanRewind {
			t.Fatalf("step %d: dry run to %s: %+v, %v", step, snaps[j].id, res, err)
		}
		if got, want := slices.Sorted(slices.Values(res.FilesChanged)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, want) {
			t.Fatalf("step %d: dry run to %s changes %v, want %v", step, snaps[j].id, got, want)
		}
		if rng.IntN(8) == 0 {
			if _, err := open().Rewind(ctx, snaps[j].id, false); err != nil {
				t.Fatalf("step %d: rewind to %s: %v", step, snaps[j].id, err)
			}
			if snaps[j].paths == nil {
				cur = maps.Clone(snaps[j].state)
			}
			for _, p := range snaps[j].paths {
				if f, ok := snaps[j].state[p]; ok {
					cur[p] = f
				} else {
					delete(cur, p)
				}
			}
			clear(racyAt) // a rewind writes files anew
			if got := readWorkspace(t, fsys, wsDir); !sameState(got, cur) {
				t.Fatalf("step %d: after the rewind to %s the workspace holds %v", step, snaps[j].id, slices.Sorted(maps.Keys(got)))
			}
		}
	}
}

// mutate makes one to six random changes to the workspace and the model.
// It returns the paths it touched.
func mutate(t *testing.T, rng *rand.Rand, fsys afero.Fs, wsDir string, cur modelState, write func(string, []byte, os.FileMode), content func(int) []byte, newPath func() string) (touched []string) {
	t.Helper()
	for range 1 + rng.IntN(6) {
		paths := slices.Sorted(maps.Keys(cur))
		if len(paths) == 0 {
			write(newPath(), content(rng.IntN(2000)), 0o644)
			continue
		}
		p := paths[rng.IntN(len(paths))]
		f := cur[p]
		touched = append(touched, p)
		switch rng.IntN(9) {
		case 0, 1, 2: // edit
			write(p, content(rng.IntN(2000)), f.mode)
		case 3: // edit, same size
			data := content(len(f.data))
			if len(data) > 0 {
				data[0] ^= 1
			}
			write(p, data, f.mode)
		case 4: // append a line
			write(p, append(slices.Clone(f.data), "appended\n"...), f.mode)
		case 5: // add
			write(newPath(), content(rng.IntN(2000)), 0o644)
		case 6: // remove
			if err := fsys.Remove(filepath.Join(wsDir, filepath.FromSlash(p))); err != nil {
				t.Fatal(err)
			}
			delete(cur, p)
		case 7: // remove a whole directory
			dir := p[:strings.LastIndexByte(p, '/')]
			if err := fsys.RemoveAll(filepath.Join(wsDir, filepath.FromSlash(dir))); err != nil {
				t.Fatal(err)
			}
			for q := range cur {
				if strings.HasPrefix(q, dir+"/") {
					delete(cur, q)
				}
			}
		case 8: // mode
			mode := os.FileMode(0o755)
			if f.mode == 0o755 {
				mode = 0o644
			}
			full := filepath.Join(wsDir, filepath.FromSlash(p))
			if err := fsys.Chmod(full, mode); err != nil {
				t.Fatal(err)
			}
			cur[p] = modelFile{data: f.data, mode: mode}
		}
	}
	return touched
}

// sneaky changes, behind its stat, some files the last snapshot hashed
// in its own timestamp tick (racyAt): the same size, other bytes, the
// mtime put back. Only the racy rule can see it; it returns the paths.
func sneaky(t *testing.T, rng *rand.Rand, fsys afero.Fs, wsDir string, cur modelState, racyAt map[string]time.Time) (touched []string) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(racyAt)) {
		f, ok := cur[p]
		if !ok || len(f.data) == 0 || rng.IntN(2) == 0 {
			continue
		}
		data := slices.Clone(f.data)
		data[rng.IntN(len(data))] ^= 0x20
		full := filepath.Join(wsDir, filepath.FromSlash(p))
		if err := afero.WriteFile(fsys, full, data, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Chtimes(full, racyAt[p], racyAt[p]); err != nil {
			t.Fatal(err)
		}
		cur[p] = modelFile{data: data, mode: f.mode}
		touched = append(touched, p)
	}
	return touched
}

// checkManifest checks that checkpoint id holds exactly the files of want.
func checkManifest(ctx context.Context, t *testing.T, m *checkpoint.Manager, id string, want modelState) {
	t.Helper()
	man, err := m.Load(ctx, id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	got := map[string]bool{}
	for _, e := range man.Files {
		if !e.Exists || e.EffectiveType() != checkpoint.TypeFile {
			continue
		}
		got[e.Path] = true
		w, ok := want[e.Path]
		if !ok {
			t.Fatalf("%s holds %s, which the workspace does not", id, e.Path)
		}
		if e.Digest != sha256Ref(w.data) || e.Mode.FileMode() != w.mode {
			t.Fatalf("%s holds %s as %s %v, the workspace as %s %v", id, e.Path, e.Digest, e.Mode.FileMode(), sha256Ref(w.data), w.mode)
		}
	}
	for p := range want {
		if !got[p] {
			t.Fatalf("%s lacks %s", id, p)
		}
	}
}

func sha256Ref(data []byte) string {
	h := sha256.Sum256(data)
	return "blob:sha256:" + hex.EncodeToString(h[:])
}

// modelDiff is what a diff from checkpoint state from to the workspace
// state to reports, by path.
func modelDiff(from, to modelState) map[string]string {
	d := map[string]string{}
	for p, b := range to {
		a, ok := from[p]
		switch {
		case !ok:
			d[p] = "added"
		case !bytes.Equal(a.data, b.data):
			d[p] = "modified"
		case a.mode != b.mode:
			d[p] = "mode"
		}
	}
	for p := range from {
		if _, ok := to[p]; !ok {
			d[p] = "deleted"
		}
	}
	return d
}

// readWorkspace reads every regular file under dir.
func readWorkspace(t *testing.T, fsys afero.Fs, dir string) modelState {
	t.Helper()
	got := modelState{}
	err := afero.Walk(fsys, dir, func(path string, info fs.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		data, err := afero.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		got[filepath.ToSlash(rel)] = modelFile{data: data, mode: info.Mode().Perm()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sameState(a, b modelState) bool {
	return maps.EqualFunc(a, b, func(x, y modelFile) bool { return bytes.Equal(x.data, y.data) && x.mode == y.mode })
}
