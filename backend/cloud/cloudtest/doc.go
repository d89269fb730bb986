// Package cloudtest gives tests fresh, empty cloud.Storage values on local
// bucket servers: memblob, and an in-process S3 server (gofakes3) listening
// on 127.0.0.1 only. GCS and Azure servers join it later.
//
// Imports: gocloud.dev, the AWS SDK, gofakes3, backend, backend/cloud.
package cloudtest
