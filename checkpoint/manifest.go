package checkpoint

import "github.com/trovekit/trove/checkpoint/manifest"

// The manifest types and constants, from package checkpoint/manifest
// (its format, codec and validation) under the names this package has
// always exported.
type (
	// Manifest describes one checkpoint (manifest.Manifest).
	Manifest = manifest.Manifest
	// Entry is one path of a checkpoint (manifest.Entry).
	Entry = manifest.Entry
	// Skipped is a file a tree checkpoint did not store (manifest.Skipped).
	Skipped = manifest.Skipped
	// Mode holds permission bits (manifest.Mode).
	Mode = manifest.Mode
)

// ManifestVersion is the manifest format this package writes. Version 1
// (the file list inline) is still read.
const ManifestVersion = manifest.Version

// manifestV1 is the first format: every entry inline in the JSON.
const manifestV1 = manifest.V1

// Kinds of checkpoint.
const (
	// KindFiles: the named paths only; rewind touches nothing else.
	KindFiles = manifest.KindFiles
	// KindTree: the whole tree minus ignored paths; rewind also deletes
	// files that appeared since, unless ignored.
	KindTree = manifest.KindTree
)

// Entry types.
const (
	TypeFile    = manifest.TypeFile
	TypeSymlink = manifest.TypeSymlink
	TypeDir     = manifest.TypeDir
)
