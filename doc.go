// Package trove is the one store a coding agent keeps its work in: it owns
// a backend.Storage (opened from a URL, or given), the root's one blob store
// (cas, under blobs/), and hands out the layers wired to it: the session
// store (images and long tool outputs as blob refs by default), workspace
// checkpoint managers, run logs and the blobs themselves. It adds what only
// the whole store can do: GC over the union of every layer's roots, Check
// (fsck), which reads everything and changes nothing, Search over the
// store's catalog (package catalog, kept outside the store), Mirror, Scan
// for secrets, Prune by a retention policy, pins, and the root's
// config.json.
//
// Imports: the standard library, backend, backend/crypt, backend/fs,
// backend/open, backend/walk, cas, catalog, checkpoint, redact, runlog, session and
// session/tree.
// It may import every package of the module except cmd/.
package trove
