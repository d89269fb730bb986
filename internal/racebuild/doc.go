// Package racebuild says whether this binary was built with the race
// detector, so that a test whose work grows with its input can keep CI
// within its time while the same test at full size runs without -race.
//
// Imports: nothing.
package racebuild
