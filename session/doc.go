// Package session is the session store an agent loop calls (specs
// 000/001) over the file format of package tree: create, load, continue
// (latest for a cwd), resume by id or unique prefix, resume at a message,
// fork (whole, up to a message, or the last N messages), delete, list
// (through a listing index per cwd directory, rebuilt from the files where
// they changed), metadata kept in a sidecar meta.json, and an SDK
// transcript stream beside the tree.
//
// A Handle appends through a background writer (bounded queue, group
// commit, first error latched) and holds the session's writer lock: a file
// lock where the backend has locks, a lease where it has none (lease.go:
// renewed while held, fenced by time, taken over once expired). NoopStore is persistence off: the same API, no storage touched.
//
// Discovery (recent sessions per cwd and across cwds, terminal breadcrumbs)
// reads only a prefix of each file.
//
// Imports: the standard library, github.com/google/uuid, backend, cas,
// session/tree, internal/jsonscan, internal/jsonl and internal/jsonw.
package session
