// Package open opens a backend.Storage from a URL: file:// (or a plain path)
// and mem:// built in, and every scheme a provider package registers:
// memblob:// and fileblob:// (backend/open/localblob), s3://
// (backend/open/s3), gs:// (backend/open/gcs), azblob://
// (backend/open/azure).
//
// Providers register in init, as gocloud's URL openers do, so a program
// links a bucket's libraries only when it imports their provider: one that
// opens only local stores stays small and starts sooner. The trove command
// imports none of them and hands bucket URLs to trove-cloud, which imports
// them all (see Missing).
//
// Imports: the standard library, backend, backend/fs, backend/mem.
package open
