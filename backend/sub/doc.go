// Package sub cuts a store down to one directory: New returns a
// backend.Storage rooted at a directory of another, names in and out
// relative to it, written on backend/intercept.
//
// New was backend.Sub before this release; it moved out with the
// interceptor it is built on, without an alias (an import cycle).
//
// Imports: the standard library, backend and backend/intercept.
package sub
