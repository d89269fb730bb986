// Package walk lists a Storage's tree with several requests in flight: on
// a bucket each List is a round trip, and GC reads whole trees of small
// directories. Ahead yields what backend.Walk yields, in its order; Files
// also reads every file as soon as its directory is listed.
//
// Imports: backend and the standard library.
package walk
