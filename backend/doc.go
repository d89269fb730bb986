// Package backend defines Storage, the one narrow interface every layer of trove
// is written against, with its errors, path rules and capabilities.
//
// Implementations live in backend/fs (afero, the OS by default), backend/mem
// (in memory, with crash simulation) and backend/cloud (gocloud.dev/blob).
// Package backend/open opens any of them from a URL.
//
// Optional fast paths are found by type assertion: WriteOnce (a write-once
// create and a read that also describes the file, one request each on a
// bucket) for content-addressed files. The functions CreateFile and
// OpenInfo use it where it is, and the general methods elsewhere.
//
// Imports: the standard library only. Nothing of trove's.
package backend
