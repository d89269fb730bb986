// Package cputime reads the CPU time this process has used, which the
// benchmarks report beside wall time: on a shared machine wall time swings
// with the load, CPU time much less.
//
// Imports: the standard library.
package cputime
