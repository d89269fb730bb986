//go:build trove_noblake3

package cas

import "hash"

// A build with the tag trove_noblake3 (the trove command as make install
// builds it) leaves zeebo/blake3 out, and with it klauspost/cpuid, whose
// package initialisation asks the CPU for its features with dozens of
// CPUID instructions: each traps to the hypervisor on a virtual machine,
// 0.3-0.8 ms of every process's start there. Nothing hashes with BLAKE3
// here: Open refuses it as the algorithm of puts, and every read, put and
// Sum of a blake3 ref fails first with ErrAlgorithmUnavailable
// (Algorithm.usable), so the two functions below are never reached.
const blake3Linked = false

func newBLAKE3() hash.Hash { panic(unreachableBLAKE3) }

func sumBLAKE3([]byte) [32]byte { panic(unreachableBLAKE3) }

const unreachableBLAKE3 = "cas: BLAKE3 hashed in a build without it (trove_noblake3): a path missed Algorithm.usable"
