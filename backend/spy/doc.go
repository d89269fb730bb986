// Package spy wraps a backend.Storage and records every call made through
// it, in order, with its names, byte counts and error. Tests use it to prove
// what did or did not reach storage: a hostile path never gets there, a dry
// run writes nothing, a no-op store makes no call at all (New(nil) fails
// every call with backend.ErrNotSupported). It is one interceptor on
// intercept.New.
//
// Ops are named after the methods, as in backend/faulty: "Capabilities",
// "EnsureDir", "Stat", "List", "ReadFile", "Open", "OpenRange", "ReadPrefix",
// "WriteFile", "WriteFrom", "OpenWriter", "CreateFile", "OpenInfo" (the
// backend.WriteOnce fast path), "PutFile", "RemoveFile" (backend.WholeFile),
// "Compact" (backend.Compacter), "Rename", "Unlink", "Lock",
// "Close", "Crash", and on the values they return "Writer.Write",
// "Writer.Sync", "Writer.Close", "Reader.Read", "Reader.Close",
// "Unlocker.Unlock".
//
// Imports: the standard library, backend and backend/intercept.
package spy
