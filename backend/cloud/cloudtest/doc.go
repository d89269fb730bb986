// Package cloudtest gives tests fresh, empty buckets and cloud.Storage values
// on local bucket servers that listen on 127.0.0.1 only:
//
//   - NewMemblob: memblob, in memory.
//   - NewFileblob: cloud.OpenFileblob in tb.TempDir() (FileblobBucket: a
//     raw fileblob bucket, sidecars and all).
//   - StartS3: gofakes3 in process, on httptest.
//   - StartGCS: fake-gcs-server's fakestorage in process, on httptest, with
//     its PublicHost set to the listener's 127.0.0.1:PORT (gcsblob's object
//     reads go to the XML API on the endpoint's host; without it they come
//     back NotFound). Its buckets open through backend/open/gcs's driver, as
//     the trove command's do; OpenGCSBlob opens one with gocloud's gcsblob,
//     to check that the two read each other's objects.
//   - StartAzure: azurite-blob 3.37.0 (npm; installed by
//     scripts/install-test-servers into .tools/azurite, or $TROVE_AZURITE),
//     started on first use with --inMemoryPersistence on a free port, in its
//     own process group with a parent-death signal on Linux, killed when the
//     test that called StartAzure ends. It runs with --disableTelemetry:
//     azurite otherwise reports to Application Insights. A missing azurite
//     skips the test, or fails it under TROVE_REQUIRE_ALL=1. The account is
//     azurite's documented devstoreaccount1 and its well-known key.
//   - StartSeaweedFS: SeaweedFS, a real object-store engine: `weed mini`
//     (master, volume server, filer and S3 gateway in one process) built from
//     its Go module at SeaweedFSVersion by scripts/install-test-servers
//     --seaweedfs into the user's cache directory (SeaweedFSBinary; $TROVE_SEAWEEDFS
//     overrides), started on first use on free ports of 127.0.0.1 with
//     telemetry, WebDAV, the admin UI and the Iceberg and Lance endpoints
//     off, 64 MiB volumes and no cap on their number (weed caps them at free
//     disk / volume size, and each bucket has volumes of its own), in its own
//     process group, killed when the test ends; each test's bucket is dropped
//     at its end. New's Storage has cloud.WithEmptyPrefixes. While the
//     script's background build runs, the first use waits for it (up to
//     $TROVE_SEAWEEDFS_WAIT, 20m); a missing weed skips, or fails under
//     TROVE_REQUIRE_ALL=1. Wrappers go in a reverse proxy in front of it.
//     LaunchSeaweedFS starts one outside a test (the fleet tool).
//
// Each server has Bucket(tb), a fresh bucket (container) opened with an
// explicitly built client whose HTTP transport dials that server only (no
// process environment, so tests stay independent), and New(tb), a Storage on
// one (on S3 with the one-request delete backend/open/s3 gives, as a store
// opened by URL has). S3 and GCS take handler wrappers that see every
// request first.
//
// Counter is such a wrapper that counts requests by method (a bucket GET is
// "LIST"), for tests that prove how many requests an operation costs:
// StartCountingS3, then Counter.During or Counter.AtMost around the
// operation.
//
// Observed with gocloud.dev v0.47.0 (cloudtest_test.go checks them):
//
//   - An IfNotExist write over an existing key fails with
//     gcerrors.FailedPrecondition everywhere: S3 412 PreconditionFailed, GCS
//     412 conditionNotMet, Azure 409 BlobAlreadyExists (older notes said
//     InvalidArgument; classify both as "exists"), fileblob its own check,
//     which is not atomic.
//   - On Azure, a NewWriter + Write + Close whose upload fails panics in
//     Close inside gocloud's azureblob writer (its upload goroutine sets the
//     pipe reader to nil, which Close then closes): a lost IfNotExist, and
//     also a cancelled context or a source that fails mid-stream. A writer
//     with no Write before Close, and Bucket.Upload, return the error.
//   - A range read that starts past the end of an object (one that shrank,
//     say) fails with HTTP 416 InvalidRange on S3, GCS and Azure, which
//     gocloud reports as gcerrors.Unknown; fileblob returns zero bytes and no
//     error. A range that starts exactly at the end is 416 on S3 and GCS but
//     zero bytes on Azure and fileblob.
//   - A reader opened before the object is overwritten still returns the old
//     bytes on all four (small objects).
//   - An object's time: S3 lists it in milliseconds but answers a HEAD or
//     GET in whole seconds, and gofakes3 stamps the HEAD's Last-Modified
//     when a PUT begins but the listed time when the object is stored, a
//     second apart when the upload straddles one (StartSlowClockS3 makes
//     that happen every time). GCS, Azure, memblob and fileblob report one
//     time both ways.
//
// Imports: the standard library, gocloud.dev/blob (blob, memblob,
// fileblob, s3blob, gcsblob, azureblob), aws-sdk-go-v2,
// cloud.google.com/go/storage, google.golang.org/api/option,
// azure-sdk-for-go (azcore, azblob), gofakes3, fake-gcs-server, backend,
// backend/cloud, backend/open/s3, backend/open/gcs and backend/open/azure.
package cloudtest
