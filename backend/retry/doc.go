// Package retry tries again the calls on a backend.Storage that are safe to
// repeat when they fail transiently, with backoff and a deadline per
// attempt: New wraps a store, written on backend/intercept. Transient,
// HTTPStatus and Backoff are there for backends that retry inside a call
// (backend/cloud does).
//
// New (then backend.Retry), Options (backend.RetryOptions), ErrTimeout,
// Backoff, Transient and HTTPStatus moved here from package backend in
// this release, without aliases: an alias in backend would be an import
// cycle.
//
// Imports: the standard library, backend and backend/intercept.
package retry
