// Package cloud is a backend.Storage on a gocloud.dev/blob bucket: memblob,
// fileblob, S3, GCS, Azure and any other gocloud driver.
//
// Object stores have no append, no rename and no directories, so:
//
//   - A logical file is a base object under its own name plus, while it is
//     being appended, immutable segment objects under
//     ".~seg/<name>/.~<number>". Each Sync uploads one segment holding only
//     the bytes written since the last Sync, created with IfNotExist so that a
//     second writer racing for the same number fails (ErrLocked) instead of
//     merging. The base records in its metadata the last segment number it
//     already contains ("covers"); readers skip segments at or below it.
//   - Compaction folds the segments into a new base (its covers set to the
//     last folded segment) and only then deletes them, so a reader or a crash
//     between the two steps sees each byte exactly once. It runs when a writer
//     closes with more than a few segments, bounding the objects per file.
//   - Rename is copy then delete (Capabilities.AtomicRename is false); the
//     copy is one atomic object write, so the destination is old or new.
//   - Directories are implied by names; an empty directory (EnsureDir, or the
//     parent of the last file removed) keeps a hidden marker ".~dir".
//
// Names starting with backend.ReservedPrefix are never listed.
//
// Imports: the standard library, gocloud.dev, backend.
package cloud
