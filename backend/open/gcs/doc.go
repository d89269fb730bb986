// Package gcs opens Google Cloud Storage buckets for trove: OpenBucket is a
// gocloud.dev/blob bucket through this package's own driver, on the GCS
// JSON API over net/http, and importing the package for its side effect
// registers gs:// with backend/open.
//
// The driver is not gocloud.dev/blob/gcsblob because that links
// cloud.google.com/go/storage, and with it gRPC, xDS, protobuf
// registrations and telemetry exporters, which cost every trove start time
// and the binary size (docs/RELIABILITY.md). It does what backend/cloud asks of a bucket, names
// objects as gcsblob does (either reads what the other wrote), and maps
// errors to the same gcerrors codes (403 and 404 NotFound, 412
// FailedPrecondition, 429 ResourceExhausted). An upload is one request,
// multipart/related, streamed; a failed or cancelled one leaves no object.
// It does not retry: backend/cloud's guard does. It makes no signed URLs.
//
// A gs://bucket URL takes gocloud's prefix= and key=, and of gcsblob's
// options: anonymous=true (no credentials), access_id=- (the same),
// universe_domain=, and grpc=false or zonal=false; grpc=true, zonal=true,
// another access_id and private_key_path (which only sign URLs) are errors.
// Credentials are Application Default Credentials (gocloud.dev/gcp). With
// STORAGE_EMULATOR_HOST set, as the official client does, requests go to
// that host over plain HTTP unless it names a scheme, without credentials.
//
// Imports: the standard library, gocloud.dev (blob, blob/driver, gcerrors,
// gcp), golang.org/x/oauth2/google, google.golang.org/api/googleapi (for
// Status; gocloud.dev/blob links it anyway), backend, backend/cloud,
// backend/open, backend/open/localblob.
package gcs
