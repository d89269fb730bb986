package trove_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
	bfs "github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/catalog"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

// plainStore writes a demo-like store (two workspaces, sessions with
// text, images and big tool outputs as blobs, forks, checkpoints, a run
// log) and returns the plaintexts it holds: message text, cwds, session
// ids, file and checkpoint names, blob digests.
func plainStore(t *testing.T, s *trove.Store, forks int) []string {
	t.Helper()
	ctx := context.Background()
	var needles []string
	for w := range 2 {
		ws := filepath.Join(t.TempDir(), fmt.Sprintf("workspace-zanzibar-%d", w))
		os.MkdirAll(ws, 0o755)
		needles = append(needles, ws)
		h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: ws, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		needles = append(needles, h.ID())
		for i := range 40 {
			text := fmt.Sprintf("canary message %d of workspace %d: the quokka sleeps", i, w)
			needles = append(needles, text)
			if err := h.AppendMessage(ctx, conformance.OneStoreReply(text)); err != nil {
				t.Fatal(err)
			}
		}
		out := strings.Repeat(fmt.Sprintf("tool output line of workspace %d, pangolin\n", w), 3000)
		needles = append(needles, "pangolin")
		if err := h.AppendMessage(ctx, conformance.OneStoreToolResult(out)); err != nil {
			t.Fatal(err)
		}
		if err := h.AppendMessage(ctx, conformance.OneStoreImage("look", bytes.Repeat([]byte("PNGIMAGEBYTES"), 5000))); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			name := fmt.Sprintf("secret_module_%d_%d.go", w, i)
			needles = append(needles, name)
			body := fmt.Sprintf("package axolotl%d\n// %s\n", i, strings.Repeat("narwhal ", 200))
			if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		needles = append(needles, "axolotl", "narwhal")
		cps, err := s.SessionCheckpoints(h, ws)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cps.CreateTree(ctx, "checkpoint-before-flamingo"); err != nil {
			t.Fatal(err)
		}
		cps.Close()
		needles = append(needles, "checkpoint-before-flamingo")
		w, err := s.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: h.ID()})
		if err != nil {
			t.Fatal(err)
		}
		needles = append(needles, w.RunID())
		if err := w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: "run input capybara"}}); err != nil {
			t.Fatal(err)
		}
		w.Close()
		needles = append(needles, "capybara")
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		for range forks {
			if _, err := s.Sessions().ForkSession(ctx, h.ID(), session.ForkOptions{Last: 20}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for ref, err := range s.Blobs().Walk(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		needles = append(needles, ref.Hex())
	}
	return needles
}

// Every byte of every object of an encrypted store is searched for the
// plaintexts the store holds: none is found, in names or content.
func TestEncryptedStoreHidesPlaintext(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := trove.Open(ctx, dir, trove.WithKey([]byte("pw")), fastKDF)
	if err != nil {
		t.Fatal(err)
	}
	needles := plainStore(t, s, 3)
	if len(needles) < 100 {
		t.Fatalf("only %d plaintexts", len(needles))
	}
	s.Close()
	_, objs := openRaw(t, dir)
	found := 0
	for name, b := range objs {
		for _, n := range needles {
			if strings.Contains(name, n) || bytes.Contains(b, []byte(n)) {
				found++
				t.Errorf("object %s holds %q", name, n)
			}
		}
	}
	t.Logf("%d plaintexts searched in %d objects: %d found", len(needles), len(objs), found)
}

// One byte flipped in any object of an encrypted store: reading the file
// fails with crypt.ErrCorrupt naming it, and Check reports it as a problem
// (no error); no read returns other bytes.
func TestEncryptedStoreByteFlips(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := trove.Open(ctx, dir, trove.WithKey([]byte("pw")), fastKDF)
	if err != nil {
		t.Fatal(err)
	}
	plainStore(t, s, 1)
	cs := s.Storage().(*crypt.Storage)
	logical := map[string]string{} // stored name -> file
	want := map[string][]byte{}
	for info, err := range backend.Walk(ctx, cs, ".") {
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsDir {
			logical[cs.StoredName(info.Name)] = info.Name
			if want[info.Name], err = cs.ReadFile(ctx, info.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()
	raw, objs := openRaw(t, dir)
	for sname, b := range objs {
		name, ok := logical[sname]
		if len(b) == 0 {
			continue // a lock file: no byte to flip
		}
		if !ok {
			if !strings.HasPrefix(sname, crypt.KeysDir+"/") {
				t.Errorf("object %s is no file of the store", sname)
			}
			continue
		}
		bad := bytes.Clone(b)
		bad[len(bad)/2] ^= 1
		if err := raw.WriteFile(ctx, sname, bad); err != nil {
			t.Fatal(err)
		}
		s, err := trove.Open(ctx, dir, trove.WithKey([]byte("pw")))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Storage().ReadFile(ctx, name)
		var pe *fs.PathError
		if !errors.Is(err, crypt.ErrCorrupt) || !errors.As(err, &pe) || pe.Path != name {
			t.Errorf("%s with a byte flipped: read %d bytes, %v; want ErrCorrupt naming it", name, len(got), err)
		}
		// Check reports the damage as a problem, and goes on: it is no
		// failure of the check (fsck exits 3, not 1).
		rep, err := s.Check(ctx)
		switch {
		case err != nil:
			t.Errorf("%s with a byte flipped: Check failed: %v; want a problem reported", name, err)
		case rep.OK() && !derived(name):
			t.Errorf("%s with a byte flipped: Check found nothing", name)
		}
		s.Close()
		if err := raw.WriteFile(ctx, sname, b); err != nil {
			t.Fatal(err)
		}
	}
}

// derived are the caches a layer rebuilds when they fail to read, as it
// does when they are stale: Check has nothing to report.
func derived(name string) bool {
	b := backend.Base(name)
	return strings.HasPrefix(name, session.IndexDir+"/") || name == "blobs/index.cache" || b == "stat.cache" || b == "writer.lock"
}

// openRaw opens the directory of a store as a plain store and reads every
// object in it.
func openRaw(t *testing.T, dir string) (backend.Storage, map[string][]byte) {
	t.Helper()
	raw, err := bfs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw, rawObjects(t, raw)
}

// An encrypted store's search catalog, plain text, lives in the user's
// cache directory (a directory only the user enters), not beside the store.
func TestEncryptedStoreCatalog(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := filepath.Join(t.TempDir(), "store")
	s, err := trove.Open(ctx, dir, trove.WithKey([]byte("pw")), fastKDF)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plainStore(t, s, 0)
	n := 0
	for h, err := range s.Search(ctx, catalog.Query{Text: "quokka"}) {
		if err != nil {
			t.Fatal(err)
		}
		n += len(h.Snippet)
	}
	if n == 0 {
		t.Fatal("search of an encrypted store found nothing")
	}
	if _, err := os.Stat(dir + ".catalog"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a catalog beside the encrypted store: %v", err)
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "trove", "catalog", "enc-*"))
	if len(dirs) != 1 {
		t.Fatalf("catalogs in the cache: %v", dirs)
	}
	if fi, err := os.Stat(dirs[0]); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("catalog directory: %v, %v", fi, err)
	}
}

// The bytes an encrypted store takes beside a plain one holding the same
// (a demo-like store and 100 forks): at most 5% more.
func TestEncryptedStoreSize(t *testing.T) {
	ctx := context.Background()
	size := func(opts ...trove.Option) int64 {
		s, err := trove.Open(ctx, "mem://", opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		plainStore(t, s, 50)
		var n int64
		for name, b := range rawObjects(t, s.Raw()) {
			if !strings.HasPrefix(name, crypt.KeysDir+"/") {
				n += int64(len(b))
			}
		}
		return n
	}
	plain, enc := size(), size(trove.WithKey([]byte("pw")), fastKDF)
	ratio := float64(enc) / float64(plain)
	t.Logf("store size: plain %d bytes, encrypted %d: %.4fx", plain, enc, ratio)
	if ratio > 1.05 {
		t.Errorf("an encrypted store takes %.3fx the bytes of a plain one, want <= 1.05", ratio)
	}
}

// A session of a cwd too long for an encrypted element's short form
// (docs/security.md, Names) is created, listed, continued and deleted.
func TestEncryptedStoreLongCwd(t *testing.T) {
	ctx := context.Background()
	s, err := trove.Open(ctx, "mem://", trove.WithKey([]byte("pw")), fastKDF)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cwd := "/home/user/" + strings.Repeat("a-rather-long-directory-name/", 9)
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: cwd, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AppendMessage(ctx, conformance.OneStoreReply("deep")); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h2, err := s.Sessions().Continue(ctx, cwd)
	if err != nil || h2.ID() != h.ID() {
		t.Fatalf("Continue: %v", err)
	}
	h2.Close(ctx)
	rep, err := s.Check(ctx)
	if err != nil || !rep.OK() || rep.Sessions != 1 {
		t.Fatalf("Check: %+v, %v", rep, err)
	}
}
