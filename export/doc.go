// Package export renders a session for people and for tools without a blob
// store: one self-contained HTML file (the whole branch tree, nothing
// fetched from the network), Markdown of the leaf path for pasting into
// issues, and JSONL with every blob ref resolved inline.
//
// Every string from the session goes through html/template, so stored
// markup is shown, never run.
//
// Imports: the standard library and session/tree (the file format it
// renders).
package export
