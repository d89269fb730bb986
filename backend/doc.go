// Package backend defines Storage, the one narrow interface every layer of
// trove is written against, with its errors, path rules and capabilities,
// and the optional fast paths a store may have (WriteOnce, WholeFile,
// Compacter, Mapper, RangeReader). Stores are backend/fs, backend/mem,
// backend/cloud and backend/crypt, opened from a URL by backend/open; a
// backend author implements backend/driver, and decorators are written on
// backend/intercept (backend/sub, logging, retry, spy, faulty).
//
// Imports: the standard library only. Nothing of trove's.
package backend
