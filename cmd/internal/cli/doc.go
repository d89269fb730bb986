// Package cli is the trove command line: one file per command, the store
// it opens, its flags and exit codes. Two programs run it: cmd/trove, which
// links no bucket provider and so starts sooner, and cmd/trove-cloud, which
// links them all; trove hands a command line naming a bucket URL to
// trove-cloud (Main, WithCompanion).
//
// Imports: the standard library, trove (the one store), backend,
// backend/crypt, backend/mem, backend/open (but no provider), cas,
// catalog, checkpoint, cmd/internal/oneproc (a search on one P), export,
// importer, internal/jsonscan, internal/jsonw,
// runlog, session, session/tree, viewer, watch, spf13/cobra and
// spf13/pflag (the command line),
// golang.org/x/sys/unix and golang.org/x/term.
package cli
