// Package backend defines Storage, the one narrow interface every layer of trove
// is written against, with its errors, path rules and capabilities.
//
// Implementations live in backend/fs (afero, the OS by default), backend/mem
// (in memory, with crash simulation) and backend/cloud (gocloud.dev/blob).
// Package backend/open opens any of them from a URL.
//
// Imports: the standard library only. Nothing of trove's.
package backend
