// Package driver is what a backend author implements: Driver, a few calls
// that differ from one store to the next, and Portable, the one layer that
// makes a backend.Storage of it, as gocloud's blob.Bucket is over its
// driver.Bucket. Users of a store need only package backend.
//
// Portable validates names, refuses calls after Close, checks the context,
// names the op and path in every error and derives the convenience methods
// (Open, ReadFile, ReadPrefix, WriteFile, Rename as a copy), so no backend
// repeats them. Optional fast paths are found by type assertion on the
// driver: FileReader, FileWriter, Renamer, Locker here, and backend's
// WriteOnce, WholeFile and Compacter. LocalLocks is a lock table for
// drivers whose locks hold within one process.
//
// Driver, Portable, NewPortable, the fast-path interfaces and LocalLocks
// moved here from package backend in this release, without aliases left
// behind: this package names backend's Info, Writer and Capabilities, so
// an alias in backend would be an import cycle. Replace backend.Driver by
// driver.Driver, backend.NewPortable by driver.NewPortable, and so on.
//
// Imports: the standard library, backend and backend/stage.
package driver
