package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "src/x"), 0o755)
	os.WriteFile(filepath.Join(dir, "src/x/b.go"), []byte("package x\n"), 0o755)
	ws, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	cs, _ := cas.Open(ctx, st)
	m, err := New(st, cs, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	man, err := m.CreateTree(ctx, "cp1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", man)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\nTWO\nthree\nfour\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("n\n"), 0o644)
	os.Remove(filepath.Join(dir, "src/x/b.go"))
	res, err := m.Rewind(ctx, "cp1", true)
	t.Logf("%+v %v", res, err)
	d, err := m.Diff(ctx, "cp1")
	t.Logf("%+v %v", d, err)
	res, err = m.Rewind(ctx, "cp1", false)
	t.Logf("%+v %v", res, err)
	res, err = m.Rewind(ctx, "cp1", false)
	t.Logf("%+v %v", res, err)
	b, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	t.Logf("%q", b)
}
