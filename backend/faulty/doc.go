// Package faulty wraps a backend.Storage to inject faults: fail the Nth call
// (of every method or of chosen ones), fail from the Nth call on, fail at
// random with a seed, short writes, ENOSPC once a byte budget is spent, EIO
// on Sync, and a hook for any other policy. It is one interceptor on
// intercept.New, so every call is covered, those on writers, readers and
// locks too.
//
// A failed call does not reach the inner store (the Close and Unlock calls
// excepted: they always release), so a test can check both that the error
// comes back and that nothing acknowledged was lost: after a failed WriteFile
// the old content remains, after a failed Sync only the earlier synced
// prefix survives a crash. Short and out-of-space writes pass the part that
// fits to the inner store, as a real disk would.
//
// Ops are named after the methods: "EnsureDir", "Stat", "List", "ReadFile",
// "Open", "OpenRange", "ReadPrefix", "WriteFile", "WriteFrom", "OpenWriter",
// "CreateFile", "OpenInfo" (the backend.WriteOnce fast path), "PutFile",
// "RemoveFile" (backend.WholeFile), "Compact" (backend.Compacter),
// "Rename", "Unlink", "Lock", "Close", and on the values they return
// "Writer.Write", "Writer.Sync", "Writer.Close", "Reader.Read",
// "Reader.Close", "Unlocker.Unlock". Capabilities and Crash are not counted.
// Injected errors are *fs.PathError values naming the op and path.
//
// Everything is deterministic: counters and seeded randomness, no timers.
//
// Imports: the standard library, backend and backend/intercept.
package faulty
