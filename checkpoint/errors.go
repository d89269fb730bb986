package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/trovekit/trove/checkpoint/manifest"
)

// Sentinel errors; every error this package returns that is about one of
// these wraps it, so errors.Is works through the context added on the way.
var (
	// ErrNotFound: no checkpoint has that id. It is also fs.ErrNotExist.
	ErrNotFound = fmt.Errorf("checkpoint not found: %w", fs.ErrNotExist)
	// ErrInvalidID: a checkpoint id that cannot name a file.
	ErrInvalidID = errors.New("invalid checkpoint id")
	// ErrUnsafePath: a path that is absolute, climbs with "..", holds a NUL
	// or would lead outside the workspace. It is also backend.ErrInvalidPath.
	ErrUnsafePath = manifest.ErrUnsafePath
	// ErrCorrupt: a manifest that does not parse or validate, or a blob it
	// needs that is missing or does not match its digest.
	ErrCorrupt = manifest.ErrCorrupt
	// ErrIsDir: a path given to Create names a directory.
	ErrIsDir = errors.New("is a directory")
	// ErrConflict: the workspace holds something rewind must not remove (a
	// directory with ignored or unknown content where a file belongs).
	ErrConflict = errors.New("workspace conflict")
)
