//go:build !race

package racebuild

// Enabled is true in a binary built with -race.
const Enabled = false
