// Package conformance holds one test suite per trove layer, run on every
// backend so that all backends prove the same behaviour:
//
//	TestStorage       backend.Storage: names, errors, atomic writes, appends, crashes, faults
//	TestCAS           cas: put, get, verify, packs, GC
//	TestSessionTree   session/tree: session files, the write pipeline, blobs, discovery
//	TestSessionStore  session: the store agents call (create, resume, fork, list, locks)
//	TestCheckpoint    checkpoint: manifests and blobs on the backend, a real workspace
//	TestRunlog        runlog: typed records, outputs in cas, crashes
//	TestTrove         trove: every layer on one store sharing one blob store, GC, Check
//
// and benchmarks of the storage and blob layers (BenchStorage, BenchCAS).
// conformance_test.TestMatrix runs each suite on each backend, plain and
// encrypted, as TestMatrix/<backend>/<suite> (suites labelled storage, cas,
// session, checkpoint, runlog, store and trove); `make conformance` prints
// it as a table. A backend's own tests run the suites too.
//
// A suite takes a constructor
//
//	func(tb testing.TB) backend.Storage
//
// that returns a fresh, empty backend and registers its own cleanup with
// tb.Cleanup. The constructor takes testing.TB, not *testing.T, so the same
// function serves the tests and the benchmarks.
//
// Only tests import this package. It uses wrappers (backend/faulty,
// backend/spy) but never a concrete backend (backend/mem, backend/fs, ...),
// so those backends' own in-package tests can run the suites without an
// import cycle.
//
// Imports: the standard library, trove, backend, backend/faulty,
// backend/logging, backend/retry, backend/spy, backend/sub, cas,
// checkpoint, runlog, session, session/tree,
// klauspost/compress/zstd and zeebo/blake3 (to write damaged blobs).
package conformance
