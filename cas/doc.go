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
// loose blobs alike. GC marks from the refs a caller passes and sweeps the
// rest after a grace period.
//
// Imports: backend, the standard library, klauspost/compress/zstd and
// zeebo/blake3. Nothing else of trove's.
package cas
