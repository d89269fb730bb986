// Package stage writes files that must become durable in an order (a pack
// before its index, both before the manifest naming them) with their
// syncs overlapped: Stage writes and syncs each under a temporary name,
// Commit puts them at their names one after another. A store offers it as
// an optional fast path (Stager; backend/fs does); on any other, Commit is
// the WriteFile it would have been.
//
// Imports: backend and the standard library.
package stage
