// Package fs is the trove backend for a directory tree: backend.Storage on any
// afero.Fs, the operating system by default.
//
// On the OS (NewOS, or New with an *afero.OsFs) every name is resolved through
// an os.Root, so no operation can reach outside the root, not even through a
// symlink swapped in concurrently: symlinks that stay inside the root work,
// any that leads out is refused with backend.ErrInvalidPath. Files are created
// 0600 and directories 0700; file contents and new directory entries are
// fsynced where the contract promises durability, and Lock is a cross-process
// flock. On any other afero.Fs (MemMapFs, BasePathFs, ...) the same code runs
// without those OS guarantees: locks are in-process only and Durable is false.
//
// Atomic writes go through temp files in the reserved directory ".~tmp" at the
// root; stale ones left by a crash are removed when a Storage is opened.
//
// Imports: the standard library, afero, gofrs/flock, backend, backend/stage,
// backend/driver and internal/beneath.
package fs
