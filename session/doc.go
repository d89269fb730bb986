// Package session keeps the conversation tree of a coding agent in the JSONL
// format of spec 003, version 3: a header line, then one entry per line, each
// with an id and a parentId, and a leaf pointer kept in memory.
//
// It loads files leniently (torn, blank and garbage lines are skipped and
// reported), migrates v1 and v2 files to v3 with one atomic rewrite, keeps
// unknown entry types and fields byte for byte, rebuilds the model context at
// any entry (buildSessionContext), and persists through backend.Storage so it
// runs on every backend: nothing is written before the first assistant
// message, then appends, Flush for durability, atomic full rewrites, and the
// first write error latched. Large images and tool outputs go to a cas.Blobs
// (the cas package) as blob:sha256: refs and come back on load.
//
// Discovery (recent sessions per cwd and across cwds, terminal breadcrumbs)
// reads only a prefix of each file.
//
// Store (OpenStore) is the API an agent loop calls (specs 000/001): create,
// load, continue, resume by id or unique prefix, resume at a message, fork
// (whole, up to a message, or the last N messages), delete, list, metadata
// kept in a sidecar meta.json, and an SDK transcript stream beside the tree.
// A Handle appends through a background writer (bounded queue, group commit,
// first error latched) and holds the session's writer lock: a file lock
// where the backend has locks, an exclusive lease file where it has none.
// NoopStore is persistence off: the same API, no storage touched.
//
// Imports: the standard library, github.com/google/uuid, backend and cas.
package session
