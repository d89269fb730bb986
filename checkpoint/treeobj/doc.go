// Package treeobj is the codec of checkpoint's tree objects: one per
// directory, stored as a blob in cas and named by its content, listing its
// children sorted by name (each an entry of the manifest, the ref of its
// own tree object, or both). Checkpoint stores and loads them (tree.go);
// this package only writes and parses one. docs/checkpoint.md describes
// the format.
//
// Imports: the standard library, checkpoint/manifest and
// checkpoint/internal/wire.
package treeobj
