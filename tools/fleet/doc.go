// Command fleet runs many trove "machines" on one bucket and checks what
// they acknowledged against it. Each machine is a process with its own host
// name (leases name it), clock offset (injected with trove.WithClock, a few
// seconds either way, so lease expiry and GC grace meet skew), workspace
// and journal. Machine 0 runs GC with a short grace, over and over;
// machine 1 mirrors the bucket to a second one; machine 2 lists every
// session and checks that each one with acknowledged messages is listed;
// the others append messages (a quarter with a tool output over 64 KiB
// that goes to the blob store: one of eight payloads every machine shares,
// or a new one), read and fork other machines' sessions (every message
// acknowledged before the read must be there), resume them (refused while
// the holder lives, taken over once its lease expired), take and rewind
// workspace checkpoints (compared file by file) and write run logs, one
// operation every -pace (2s) on average: every GC reads every root, so the
// rate the bucket grows at sets how long a GC run takes.
//
// A machine writes a journal record only once the call that makes the
// operation durable returned. The parent kills a random machine with
// SIGKILL every second or so and restarts it; after each kill it checks
// the killed machine's journal against the bucket, and at the end, with
// every machine stopped, every journal, every listing against the files,
// and fsck. The rules: nothing acknowledged lost, no message acknowledged
// by a writer after another writer took its session (two_writers), no blob
// that an acknowledged message refers to removed, every listing equal to
// the files.
//
// `make fleet` runs it; TestFleet runs a short one under `make test`:
//
//	go run ./tools/fleet [-machines 8] [-kills 200] [-gc 20] [-every 1s]
//	    [-pace 2s] [-engine auto|seaweedfs|gofakes3] [-faults] [-dir DIR]
//	    [-seed S] [-v]
//
// The engine is SeaweedFS when scripts/install-test-servers built it (or
// once the build it runs in the background ends), else the S3 fake in a
// server process of its own. Its last line is fleet:
// machines=N kills=N gc=N acked=N lost=N two_writers=N
// live_blob_removed=N listing_mismatches=N; it exits 1 on any loss or
// broken rule.
//
// Imports: the standard library, trove, backend/open, backend/cloud/cloudtest
// (to start weed), cas, runlog, session, session/tree,
// tools/internal/treehash, aws-sdk-go-v2 (S3), gofakes3. A development
// tool: nothing imports it.
package main
