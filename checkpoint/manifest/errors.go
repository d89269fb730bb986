package manifest

import (
	"errors"
	"fmt"

	"github.com/trovekit/trove/backend"
)

// Sentinel errors, which checkpoint returns as its own (checkpoint's
// ErrUnsafePath and ErrCorrupt are these).
var (
	// ErrUnsafePath: a path that is absolute, climbs with "..", holds a NUL
	// or would lead outside the workspace. It is also backend.ErrInvalidPath.
	ErrUnsafePath = fmt.Errorf("unsafe path: %w", backend.ErrInvalidPath)
	// ErrCorrupt: a manifest that does not parse or validate, or a blob it
	// needs that is missing or does not match its digest.
	ErrCorrupt = errors.New("checkpoint corrupt")
)
