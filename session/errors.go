package session

import "errors"

// ErrAmbiguous marks a session id prefix that matches several sessions.
// Errors of the file format (tree.ErrInvalid, tree.ErrCorrupt, ...) and
// fs.ErrNotExist for a missing session come through unchanged.
var ErrAmbiguous = errors.New("ambiguous session id prefix")
