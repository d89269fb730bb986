package cas_test

import (
	"context"
	"fmt"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

func Example() {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	ref, err := blobs.Put(ctx, []byte("hello, blob\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	// The same bytes give the same ref, stored once.
	again, _ := blobs.Put(ctx, []byte("hello, blob\n"))
	data, err := blobs.Get(ctx, ref) // verified against the digest
	if err != nil {
		fmt.Println(err)
		return
	}
	ok, _ := blobs.Has(ctx, ref)
	fmt.Println(ref)
	fmt.Println(again == ref, ok)
	fmt.Printf("%q\n", data)
	// Output:
	// blob:sha256:392033f3c6621200e3f594e2fb7f2ea2b6d1e13801d75d5c6203ce9507de4965
	// true true
	// "hello, blob\n"
}
