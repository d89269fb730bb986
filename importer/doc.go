// Package importer brings other agents' sessions into a trove store without
// changing the source files. Each imported session's id is derived from the
// source's own id of it, and its provenance (import.json in its sidecar)
// records the source and the file as written: importing the same file
// twice adds nothing, and a source that only grew brings its session up to
// date unless it was changed in trove since (docs/import-mirror.md). A
// Follower imports a source that grows a batch of lines at a time, to the
// same result (docs/live-capture.md).
//
// Imports: the standard library, trove, backend, cas, session and
// session/tree.
package importer
