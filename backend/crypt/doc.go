// Package crypt is encryption at rest for any backend.Storage: a Storage
// over an inner one that keeps every file authenticated-encrypted under an
// encrypted name (docs/security.md has the format and what an attacker with
// the bucket learns).
//
// Content is sealed with AES-256-GCM in frames of 64 KiB, each under a key
// of its own derived from a random nonce, each bound to the file's logical name, its place and its
// kind as associated data, so a swapped, moved or replayed object or frame
// fails to open: ErrCorrupt, naming the file. A whole write is cut into full
// frames, so ranged reads (pack reads) open only the frames they cover and
// a size follows from the object's size; each Sync of an append writer adds
// one frame, and a last frame cut short by a crash is dropped as a torn
// line is. Names are encrypted element by element, deterministically
// (SIV: an HMAC-SHA256 IV keys AES-CTR), so equal names stay equal (dedup)
// and reveal nothing else.
//
// A random master key, from which HKDF derives the content and name keys,
// is wrapped by passphrases or key files (scrypt) in key objects under
// keys/ in the inner store, in plain JSON: Init, Open, AddKey, RemoveKey,
// ChangeKey and ListKeys change the wrapping, never the data. New takes a
// master key directly. The inner store's fast paths (WriteOnce, WholeFile,
// Compacter, locks) stay fast paths.
//
// Imports: the standard library, golang.org/x/crypto, backend.
package crypt
