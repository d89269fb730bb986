// Package watch imports coding agents' sessions into a trove store as
// they are written: it follows Claude Code's, Codex's and pi's session
// directories with file notifications (fsnotify) and a periodic stat-only
// rescan for what notifications miss, and feeds the lines appended to each
// file to an importer.Follower, reading only the new bytes. Offsets are
// kept in a state file across runs (docs/live-capture.md).
//
// Imports: trove, importer, fsnotify and the standard library.
package watch
