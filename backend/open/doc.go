// Package open opens a backend.Storage from a URL: file:// (or a plain path),
// mem://, and the gocloud.dev bucket schemes (s3://, gs://, azblob://,
// fileblob:// for gocloud fileblob, memblob://).
//
// It lives apart from package backend because it imports every backend and
// they import backend; a registry filled by init functions would be a global.
//
// Imports: backend, backend/fs, backend/mem, backend/cloud.
package open
