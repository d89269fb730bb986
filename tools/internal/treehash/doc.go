// Package treehash hashes a workspace tree file by file, so the development
// tools (tools/fleet, tools/torture) compare a workspace with what a
// checkpoint restored in one way. Each caller says how it treats symlinks.
//
// Imports: the standard library only.
package treehash
