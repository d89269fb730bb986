// Command fileonly opens a store by URL and imports no provider package:
// TestFileOnlyLinksNoSDK builds it to measure what backend/open links.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/trovekit/trove/backend/open"
)

func main() {
	ctx := context.Background()
	st, err := open.URL(ctx, os.Args[1])
	if err != nil {
		scheme, _, _ := strings.Cut(os.Args[1], "://")
		fmt.Fprintln(os.Stderr, err, "missing:", open.Missing(scheme))
		os.Exit(1)
	}
	defer st.Close()
	if err := st.WriteFile(ctx, "x", []byte("ok")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ok")
}
