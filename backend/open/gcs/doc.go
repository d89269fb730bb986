// Package gcs opens Google Cloud Storage buckets for trove: OpenBucket is a
// gocloud.dev/blob bucket through this package's own driver, on the GCS
// JSON API over net/http, and importing the package for its side effect
// registers gs:// with backend/open (still through gocloud.dev/blob/gcsblob,
// with its URL options and the default credentials).
//
// The driver is not gocloud.dev/blob/gcsblob because that links
// cloud.google.com/go/storage, and with it gRPC, xDS, protobuf
// registrations and telemetry exporters: some 5 ms of every trove start and
// 30 MB of binary. It does what backend/cloud asks of a bucket, names
// objects as gcsblob does (either reads what the other wrote), and maps
// errors to the same gcerrors codes (403 and 404 NotFound, 412
// FailedPrecondition, 429 ResourceExhausted). An upload is one request,
// multipart/related, streamed; a failed or cancelled one leaves no object.
// It does not retry: backend/cloud's guard does. It makes no signed URLs.
//
// Imports: gocloud.dev (blob, blob/driver, blob/gcsblob, gcerrors),
// google.golang.org/api/googleapi (for Status; gocloud.dev/blob links it
// anyway), backend, backend/cloud, backend/open, backend/open/localblob.
package gcs
