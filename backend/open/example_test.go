package open_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/open"
)

func ExampleURL() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "trove-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	// file:// (or a plain path) is local disk; mem://, memblob://,
	// fileblob://, s3://, gs:// and azblob:// name the other stores.
	st, err := open.URL(ctx, "file://"+filepath.ToSlash(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.WriteFile(ctx, "notes/today.txt", []byte("hello\n")); err != nil { // atomic, durable replace
		fmt.Println(err)
		return
	}
	w, err := st.OpenWriter(ctx, "logs/run.jsonl", backend.WriterOptions{}) // append-only
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Fprintf(w, "{\"seq\":1}\n")
	if err := w.Sync(); err != nil { // durable when it returns
		fmt.Println(err)
	}
	w.Close()
	for info, err := range st.List(ctx, "notes") {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(info.Name, info.Size)
	}
	_, err = open.URL(ctx, "nosuch://bucket")
	fmt.Println(errors.Is(err, open.ErrUnknownScheme))
	// Output:
	// notes/today.txt 6
	// true
}
