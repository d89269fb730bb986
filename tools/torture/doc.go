// Command torture kills real trove processes with SIGKILL at random points
// while they append session messages and transcript lines, put blobs
// (single, streamed, batched into packs), take and rewind tree checkpoints
// and write run logs on the OS file system, search and rebuild the store's
// catalog, and after each kill checks that every operation the child
// acknowledged is present and exact, that a search finds each acknowledged
// message exactly once (catalog_kills counts the kills that landed inside a
// search or a rebuild), that the store resumes and takes appends, and that
// fsck passes.
//
// A child acknowledges an operation on its standard output only once the
// call that makes it durable has returned (Flush, Put, Batch.Flush,
// checkpoint Create, run log Sync). `make torture` runs it; its test runs a
// short version under `make test`:
//
//	go run ./tools/torture [-n 200] [-dir DIR] [-seed S] [-v]
//
// It prints kills=N acked=N lost=N torn=N ... and exits 1 on any loss.
//
// Imports: the standard library, trove, cas, catalog, runlog, session,
// session/tree and tools/internal/treehash. A development tool: nothing imports it.
package main
