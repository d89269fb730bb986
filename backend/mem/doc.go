// Package mem is an in-memory backend.Storage for tests and ephemeral stores.
//
// It is safe for concurrent use, copies data on the way in and out, keeps
// real directories, and simulates a crash: it knows which bytes are durable
// and Crash drops the rest, so every layer's recovery can be unit tested.
//
// Crash model. WriteFile, WriteFrom, EnsureDir, Rename and Unlink are durable
// when they return, as on a disk with fsync of the file and its directory.
// Bytes appended through a Writer are durable once Sync returns; Sync also
// makes a file created by OpenWriter, and the directories OpenWriter created
// for it, durable. After Crash:
//   - a file created by OpenWriter and never synced, renamed or rewritten is
//     gone, as is any directory only such a file needed (its directory entry
//     was never fsynced);
//   - every other file holds its synced content: a prefix of what was
//     written, at least everything synced (WithCrashKeep may keep more);
//   - a Truncate that was never followed by Sync is undone;
//   - a renamed file that was never synced exists at its new name, empty
//     (rename is durable, the data was not: the classic missing-fsync bug);
//   - open writers fail with backend.ErrClosed and in-process locks are
//     released, as the process holding them is gone.
//
// Imports: the standard library, backend and backend/driver.
package mem
