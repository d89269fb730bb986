package checkpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/checkpoint"
)

// What `trove checkpoint rewind --json` prints.
func ExampleManager_Rewind() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)

	m, err := checkpoint.OpenDir(ctx, mem.New(), dir)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.Create(ctx, "msg-1", []string{"main.go", "notes.txt"}) // notes.txt: absent

	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { panic(1) }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a\nb\n"), 0o644)

	dry, _ := m.Rewind(ctx, "msg-1", true)
	out, _ := json.Marshal(dry)
	fmt.Println(string(out))
	d, _ := m.Diff(ctx, "msg-1")
	out, _ = json.Marshal(d)
	fmt.Println(string(out))
	// Output:
	// {"canRewind":true,"filesChanged":["main.go","notes.txt"],"insertions":1,"deletions":3,"restored":["main.go"],"deleted":["notes.txt"]}
	// {"from":"msg-1","to":"","files":[{"path":"main.go","status":"modified","insertions":1,"deletions":1},{"path":"notes.txt","status":"added","insertions":2,"deletions":0}],"insertions":3,"deletions":1}
}
