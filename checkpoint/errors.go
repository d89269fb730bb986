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
	// ErrUnsafePath (a path that would lead outside the workspace; also
	// backend.ErrInvalidPath) and ErrCorrupt (a manifest or a blob it needs
	// that fails to parse or verify) are manifest's, documented there.
	ErrUnsafePath = manifest.ErrUnsafePath
	ErrCorrupt    = manifest.ErrCorrupt
	// ErrIsDir: a path given to Create names a directory.
	ErrIsDir = errors.New("is a directory")
	// ErrConflict: the workspace holds something rewind must not remove (a
	// directory with ignored or unknown content where a file belongs).
	ErrConflict = errors.New("workspace conflict")
)
