// Package viewer is trove's read-only web viewer, which `trove serve`
// runs: the store's sessions (rendered by package export), their branch
// trees, checkpoints with line diffs, runs, forks and subagents, full-text
// search over the store's catalog (hits link to their entry) and usage
// stats drawn in inline SVG, on pages that make no request outside the
// viewer.
//
// Guard is what stands in front of it: a request must name the address the
// viewer listens on (no DNS rebinding) and carry the run's token (from the
// URL serve prints, then a cookie). Serve New only behind Guard.
//
// Imports: the standard library, trove, cas, catalog, checkpoint,
// checkpoint/linediff, export, runlog, session, session/tree.
package viewer
