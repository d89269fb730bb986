// Package cas is trove's content-addressed blob store: immutable blobs named
// by the digest of their bytes (blob:sha256:<hex> or blob:blake3:<hex>), kept
// under <root>/blobs on any backend.Storage. Sessions, checkpoints and run
// logs share one store per root, so equal content is stored once.
//
// Blobs are stored zstd-compressed when that saves space and raw otherwise,
// behind a small header recording the codec and the original length. Every
// read verifies the digest and bounds decompression. Many small blobs written
// together (Batch, PutMany) go into pack objects with an index, so a snapshot
// of thousands of files costs a handful of objects; readers see packed and
// loose blobs alike. Small compressible blobs of a batch share block
// records, zstd frames of several each (they compress better together), at
// zstd's fastest level; reading one decodes its frame. The zstd coders and
// the buffers blocks and packs are gathered in are kept by the process, not
// the Store, for the next Store (a program that opens one per operation);
// docs/RELIABILITY.md has what stays live. GC marks from the refs a caller
// passes and sweeps the rest after a grace period; with GCCompact it also
// rewrites what batches wrote into cold packs, small blobs sorted by
// content into larger blocks at zstd's best level (repack.go). AutoPack
// (autopack.go) merges small packs, keeping every blob, once a store holds
// more than a limit of them, so that a writer of a pack per operation does
// not leave an index listing that grows without end.
//
// Layout under the store's directory (blobs/ at the root of a trove store):
//
//	blobs/sha256/<hex[:2]>/<hex>   a loose blob (blake3/ likewise)
//	blobs/packs/<id[:2]>/<id>      a pack: many small blobs back to back
//	blobs/index/<id>               the index of pack <id>, written after it
//	blobs/tmp/<id>                 a streamed put in progress
//	blobs/index.cache              every index at some refresh, in one file
//	                               sorted by ref (advisory; see idxcache.go)
//	blobs/autopack.lock            the lock of AutoPack, where storage locks
//
// Pack ids are 32 random hex digits. Every stored blob, loose or packed,
// starts with a 16-byte header ("trvb", version, codec, flags, original
// length); see format.go for the byte layout of headers, packs and indexes.
//
// BLAKE3 is left out of a build with the tag trove_noblake3 (the trove
// command as make install builds it: zeebo/blake3's CPU probe costs a
// process 0.3-0.8 ms of its start on a virtual machine). There, blake3 refs
// still parse and Has, Stat, Delete, Walk and GC take them, but whatever
// would hash one (a read, a put, Sum, Verify, WithAlgorithm) fails with
// ErrAlgorithmUnavailable; Algorithm.Linked says which build this is.
//
// Imports: backend, backend/stage, backend/walk (GC reads roots many at a time), the standard library, klauspost/compress/zstd and
// zeebo/blake3 (not under trove_noblake3). Nothing else of trove's.
package cas
