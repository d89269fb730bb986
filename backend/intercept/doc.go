// Package intercept is the one forwarder decorators of a backend.Storage are
// written on: New wraps a store so that an Interceptor runs around every
// call, and every call on the writers, readers and locks calls return, and
// may rewrite names, data and infos or fail the call. backend/sub,
// backend/logging, backend/retry, backend/spy and backend/faulty are each
// one Interceptor.
//
// Call, Interceptor and New (then backend.Intercept) and Store (then
// backend.Intercepted) moved here from package backend in this release,
// without aliases left behind: this package names backend's Storage and
// Info, so an alias in backend would be an import cycle.
//
// Imports: the standard library and backend.
package intercept
