// Package watch imports coding agents' sessions into a trove store as
// they are written: it follows Claude Code's, Codex's and pi's session
// directories with file notifications (fsnotify) and a periodic stat-only
// rescan for what notifications miss, and feeds the lines appended to each
// file to an importer.Follower, reading only the new bytes. Offsets and
// each source's conversion state (importer.Follower.State) are kept
// across runs, so a watcher killed and started again goes on from where
// it stopped (docs/live-capture.md).
//
// Imports: trove, importer, session/tree, fsnotify, gofrs/flock and the
// standard library.
package watch
