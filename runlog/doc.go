// Package runlog persists the runs of a coding agent as the run log spec
// (docs/formats.md) describes: one append-only JSONL file per run at
// runs/YYYY/MM/DD/<run_id>.jsonl (the UTC date of the header's
// started_at), typed records with sequence numbers,
// paired llm.request/llm.response records, full tool outputs (large ones in
// the cas blob store, named by output_ref), and session state snapshots at
// state/<session_id>.json for resume.
//
// It is for auditing and best-effort replay: a Writer appends records in the
// order they are observed and syncs at the points where losing the tail would
// lose the run's shape (see Writer); readers accept what later versions or
// other writers produce (unknown record types, fields and enum values are
// kept, never an error), skip a torn last line, and report a run that ended
// without run.end as incomplete. Each record read keeps its raw JSON beside
// the typed value, so writing it back gives the same JSON object.
//
// Replay: Records iterates over one run, Runs and Summaries list runs newest
// first (by date, by session), Find resolves a run id or a unique prefix, and
// Summary condenses a run (duration, status, llm calls, tokens, tool calls,
// errors) in a stable JSON shape (docs/runlog.md).
//
// Imports: the standard library, backend, cas and internal/jsonl (the line
// reader and appender it shares with session trees).
package runlog
