// Package conformance holds one test suite per trove layer, run by every
// backend's tests so that all backends prove the same behaviour.
//
// Storage is here now (TestStorage, BenchStorage); cas, session, checkpoint
// and runlog suites follow. A suite takes a constructor
//
//	func(tb testing.TB) backend.Storage
//
// that returns a fresh, empty backend and registers its own cleanup with
// tb.Cleanup. The constructor takes testing.TB, not *testing.T, so the same
// function serves the tests and the benchmarks.
//
// This package may import every trove package and nothing but tests may
// import it. It uses wrappers (backend/faulty) but never a concrete backend
// (backend/mem, backend/fs, ...), so those backends' own in-package tests can
// run the suites without an import cycle.
package conformance
