// Package manifest is checkpoint's manifest: the JSON record of one
// checkpoint (Manifest, its Entry per path, Skipped files), its
// hand-written JSON codec (encoding/json reads what it writes and the
// other way round, at a fraction of the cost) and the validation rewind
// relies on before it touches a file (Validate, ValidPath, ValidRef).
// docs/checkpoint.md describes the format. Package checkpoint re-exports
// the types under their old names.
//
// Imports: the standard library, backend (ErrUnsafePath wraps its
// ErrInvalidPath), cas (refs), checkpoint/internal/wire and
// internal/jsonscan (its strings' escapes).
package manifest
