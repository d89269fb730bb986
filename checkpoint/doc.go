// Package checkpoint snapshots a workspace (the directory an agent edits)
// and rewinds it, as coding agents do before each mutating tool call, with
// no git binary and no shadow repository.
//
// A Manager pairs one Workspace (Dir for a real directory, confined with
// os.Root; FS for any afero.Fs) with a trove store: Create snapshots named
// files (absent ones recorded as absent), CreateTree a whole tree under
// .gitignore rules, Rewind restores a checkpoint (or reports, with a dry
// run, exactly what it would change, as the session store API's RewindFilesResult), Diff
// and DiffCheckpoints list changed paths with line counts.
//
// File content goes into the root's one cas store through its batch (pack)
// API, so unchanged content costs nothing and content a session holds too is
// stored once. Each checkpoint is one small JSON manifest (package
// checkpoint/manifest: the types, their codec and validation) naming a tree of
// content-addressed directory objects (checkpoint/treeobj), so unchanged directories
// are shared between checkpoints (one of a few named files lists them
// inline, the version 1 form), and an edited file is stored as a delta
// against its earlier version (delta.go); Roots lists every blob either
// needs, for GC and fsck. Version 1 manifests are still read. A
// stat cache (package checkpoint/statcache) makes a second snapshot of a
// large tree read only the files whose stat changed, with git's
// racy-timestamp rule so no change is missed.
// docs/checkpoint.md has the manifest format, rewind semantics and safety
// rules.
//
// Imports: the standard library, backend, backend/stage, backend/walk, cas, checkpoint/ignore,
// checkpoint/linediff (the line counts of a report), checkpoint/manifest,
// checkpoint/statcache, checkpoint/treeobj, checkpoint/internal/wire (the
// binary form of deltas and refs), internal/beneath, afero and golang.org/x/sys/unix (Linux).
package checkpoint
