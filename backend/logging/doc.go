// Package logging logs every call made on a backend.Storage with log/slog:
// New wraps a store, written on backend/intercept.
//
// New was backend.Logged before this release; it moved out with the
// interceptor it is built on, without an alias (an import cycle).
//
// Imports: the standard library, backend and backend/intercept.
package logging
