// Package tree is the session file format: the conversation tree of a
// coding agent in the pi session v3 JSONL format: a header line,
// then one entry per line, each with an id and a parentId, and a leaf
// pointer kept in memory.
//
// It loads files leniently (torn, blank and garbage lines are skipped and
// reported), migrates v1 and v2 files (and the agent JSONL dialect) to v3 with
// one atomic rewrite, keeps unknown entry types and fields byte for byte,
// rebuilds the model context at any entry (buildSessionContext), checks a
// file strictly (Check), and persists through backend.Storage so it runs on
// every backend: nothing is written before the first assistant message,
// then appends, Flush for durability, atomic full rewrites, and the first
// write error latched. Large images and tool outputs go to a cas.Blobs as
// blob:sha256: refs and come back on load.
//
// The agent-facing store (create, resume, fork, list, metadata, locks) is
// package session, one level up.
//
// Imports: the standard library, backend, cas, internal/jsonscan,
// internal/jsonl and internal/jsonw.
package tree
