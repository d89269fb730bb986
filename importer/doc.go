// Package importer brings other agents' sessions into a trove store without
// changing the source files. Each imported session's id is derived from the
// source file's content, so importing the same file twice adds nothing.
package importer
