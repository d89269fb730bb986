// Package backend defines Storage, the one narrow interface every layer of trove
// is written against, with its errors, path rules and capabilities.
//
// Implementations live in backend/fs (afero, the OS by default), backend/mem
// (in memory, with crash simulation) and backend/cloud (gocloud.dev/blob).
// Package backend/open opens any of them from a URL. A backend author
// implements backend/driver's Driver, a few calls, and gets a Storage
// from it.
//
// Optional fast paths are found by type assertion: WriteOnce (a write-once
// create and a read that also describes the file, one request each on a
// bucket) for content-addressed files, WholeFile for small files written
// whole, Compacter for stores that keep appended files in parts,
// Authenticated for stores whose reads are authenticated (so cas need not
// re-hash a blob it reads). The
// functions CreateFile, OpenInfo, PutFile, RemoveFile and Compact use them
// where they are, and the general methods elsewhere.
//
// Decorators are written once, on Intercept: an Interceptor runs around
// every call, and every call on the writers, readers and locks calls
// return, and may rewrite names, data and infos or fail the call. Sub,
// Logged (log/slog) and Retry (transient failures, backoff, a deadline per
// attempt) are built on it here, and so are backend/spy and backend/faulty.
//
// Imports: the standard library only. Nothing of trove's.
package backend
