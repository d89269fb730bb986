// Package wire holds the binary primitives checkpoint's on-disk codecs
// share (tree objects, the stat cache, deltas): varints, length-prefixed
// strings, flag bytes, and blob refs in their 33-byte form (an algorithm
// byte and the digest), read by a Reader that latches its first error.
//
// Imports: the standard library and cas.
package wire
