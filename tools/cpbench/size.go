package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

type sizeConfig struct{ files, mb, checkpoints int }

type sizes struct {
	files      int
	trove, git int64
}

// sizeScenario takes sz.checkpoints checkpoints of a fresh tree with trove
// and with a shadow git repository, editing 10 text files (as
// changeFiles does) before each but the first, then compares the bytes of
// the trove store with those of the git repository after git gc.
func sizeScenario(ctx context.Context, dir string, sz sizeConfig, logger *slog.Logger) (sizes, error) {
	ws, wsGit := filepath.Join(dir, "ws-trove"), filepath.Join(dir, "ws-git")
	storeDir, gitDir := filepath.Join(dir, "store"), filepath.Join(dir, "shadow.git")
	fmt.Printf("size scenario: %d checkpoints of a %d-file, ~%d MB tree ...\n", sz.checkpoints, sz.files, sz.mb)
	paths, _, err := buildTree(ws, sz.files, int64(sz.mb)<<20)
	if err != nil {
		return sizes{}, err
	}
	if _, _, err := buildTree(wsGit, sz.files, int64(sz.mb)<<20); err != nil {
		return sizes{}, err
	}
	store, err := fs.NewOS(storeDir)
	if err != nil {
		return sizes{}, err
	}
	defer store.Close()
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"--git-dir=" + gitDir, "--work-tree=" + wsGit}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.autocrlf", "false"}, {"config", "commit.gpgsign", "false"}, {"config", "gc.auto", "0"}} {
		if err := git(args...); err != nil {
			return sizes{}, err
		}
	}
	rng := rand.New(rand.NewPCG(11, 11))
	for i := range sz.checkpoints {
		if i > 0 {
			changed := pickText(paths, rng, 10)
			for _, w := range []string{ws, wsGit} {
				if err := changeFiles(w, changed, i); err != nil {
					return sizes{}, err
				}
			}
		}
		id := fmt.Sprintf("cp%d", i)
		m, err := checkpoint.OpenDir(ctx, store, ws, checkpoint.WithLogger(logger))
		if err != nil {
			return sizes{}, err
		}
		_, err = m.CreateTree(ctx, id)
		m.Close()
		if err != nil {
			return sizes{}, err
		}
		if err := git("add", "-A"); err != nil {
			return sizes{}, err
		}
		if err := git("commit", "-q", "--no-verify", "-m", id); err != nil {
			return sizes{}, err
		}
	}
	// Each side measured after its own gc: git gc, and the GC trove gc
	// runs (it repacks what the checkpoints wrote).
	if err := git("gc", "-q"); err != nil {
		return sizes{}, err
	}
	before, err := dirBytes(storeDir)
	if err != nil {
		return sizes{}, err
	}
	last := fmt.Sprintf("cp%d", sz.checkpoints-1)
	readsBefore, err := readCost(ctx, store, ws, last, logger)
	if err != nil {
		return sizes{}, err
	}
	ts, err := trove.New(ctx, store, trove.WithLogger(logger))
	if err != nil {
		return sizes{}, err
	}
	defer ts.Close()
	t0 := time.Now()
	rep, err := ts.GC(ctx)
	if err != nil {
		return sizes{}, err
	}
	gcTime := time.Since(t0)
	t, err := dirBytes(storeDir)
	if err != nil {
		return sizes{}, err
	}
	fmt.Printf("trove gc: %s -> %s in %s (%d blobs live, %d unreferenced kept for the grace period, %d packs repacked)\n",
		mib(before), mib(t), round(gcTime), rep.Kept, rep.Young, rep.Repacked)
	readsAfter, err := readCost(ctx, store, ws, last, logger)
	if err != nil {
		return sizes{}, err
	}
	fmt.Printf("trove reads before -> after gc (median of 3, fresh Manager or store each): dry-run diff to cp0 %s -> %s, to %s %s -> %s, every blob once %s -> %s\n",
		round(readsBefore[0]), round(readsAfter[0]), last, round(readsBefore[1]), round(readsAfter[1]), round(readsBefore[2]), round(readsAfter[2]))
	g, err := dirBytes(gitDir)
	if err != nil {
		return sizes{}, err
	}
	if err := printBreakdown(ctx, store, storeDir, gitDir); err != nil {
		return sizes{}, err
	}
	return sizes{files: len(paths), trove: t, git: g}, nil
}

// readCost times what reading the store costs: a dry-run diff against
// the first checkpoint (every edited file's old content read) and against
// the last (a few trees), and a read of every blob.
func readCost(ctx context.Context, store backend.Storage, ws, last string, logger *slog.Logger) ([3]time.Duration, error) {
	var out [3]time.Duration
	diff := func(id string) func() error {
		return func() error {
			m, err := checkpoint.OpenDir(ctx, store, ws, checkpoint.WithLogger(logger))
			if err != nil {
				return err
			}
			defer m.Close()
			_, err = m.Rewind(ctx, id, true)
			return err
		}
	}
	readAll := func() error {
		blobs, err := cas.Open(ctx, store)
		if err != nil {
			return err
		}
		for ref, err := range blobs.Walk(ctx) {
			if err != nil {
				return err
			}
			if _, err := blobs.Get(ctx, ref); err != nil {
				return err
			}
		}
		return nil
	}
	for i, f := range []func() error{diff("cp0"), diff(last), readAll} {
		var ds []time.Duration
		for range 3 {
			t0 := time.Now()
			if err := f(); err != nil {
				return out, err
			}
			ds = append(ds, time.Since(t0))
		}
		out[i] = median(ds)
	}
	return out, nil
}

// printBreakdown says where the bytes of each side go: for trove, blobs by
// kind (file content, tree objects, deltas; stored bytes, record headers
// included), pack indexes, the stat cache and the manifests.
func printBreakdown(ctx context.Context, store backend.Storage, storeDir, gitDir string) error {
	blobs, err := cas.Open(ctx, store)
	if err != nil {
		return err
	}
	var kinds [3]struct{ n, stored int64 }
	for ref, err := range blobs.Walk(ctx) {
		if err != nil {
			return err
		}
		info, err := blobs.Stat(ctx, ref)
		if err != nil {
			return err
		}
		head, err := blobs.Open(ctx, ref)
		if err != nil {
			return err
		}
		var magic [5]byte
		n, _ := io.ReadFull(head, magic[:])
		head.Close()
		k := 0
		switch string(magic[:n]) {
		case "trvt1":
			k = 1
		case "trvd1":
			k = 2
		}
		kinds[k].n++
		kinds[k].stored += info.StoredSize
	}
	index, err := dirBytes(filepath.Join(storeDir, "blobs", "index"))
	if err != nil {
		return err
	}
	var manifests, cache int64
	err = filepath.WalkDir(filepath.Join(storeDir, "checkpoints"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil && strings.HasSuffix(p, ".json") {
			manifests += info.Size()
		} else if err == nil {
			cache += info.Size()
		}
		return err
	})
	if err != nil {
		return err
	}
	objects, err := dirBytes(filepath.Join(gitDir, "objects"))
	if err != nil {
		return err
	}
	gitIndex, err := dirBytes(filepath.Join(gitDir, "index"))
	if err != nil {
		return err
	}
	fmt.Printf("trove: file content %s (%d blobs), trees %s (%d), deltas %s (%d), pack indexes %s, stat cache %s, manifests %s\n",
		mib(kinds[0].stored), kinds[0].n, mib(kinds[1].stored), kinds[1].n, mib(kinds[2].stored), kinds[2].n, mib(index), mib(cache), mib(manifests))
	fmt.Printf("git:   objects %s, index %s\n", mib(objects), mib(gitIndex))
	return nil
}

// dirBytes is the total length of the files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}
