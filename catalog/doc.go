// Package catalog is a store's search and listing catalog: an embedded
// SQLite database (modernc.org/sqlite, pure Go) with an FTS5 index over
// the text of every session (message text, thinking, tool calls, tool
// results including outputs kept as blobs, summaries, titles and labels)
// and of every run log (inputs, answers, tool outputs, final answers), and
// a row per entry with what usage stats add up.
//
// It is derived, never the only copy: it lives outside the store (beside
// a local store, in the user's cache directory for a bucket), and a
// missing, damaged or older-schema catalog is rebuilt from the session
// files. It is kept current incrementally: each query lists the session
// files and reads only the bytes appended since the catalog last read a
// file. The FTS5 table is contentless: snippets are read back from the
// session files by offset. The tokenizer, which splits identifiers
// (parseRef, parse_ref) and keeps them whole, runs in Go on the text and
// on queries alike; SQLite indexes its token stream. docs/catalog.md has
// the schema, tokenizer and query syntax.
//
// Imports: the standard library, modernc.org/sqlite, golang.org/x/sys/unix
// (the mapping's advice, Linux), backend, cas, session, runlog and
// internal/jsonscan.
package catalog
