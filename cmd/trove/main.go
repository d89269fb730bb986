// Command trove keeps what AI coding agents must not lose: sessions, blobs,
// checkpoints and run logs, on local disk or in memory. It links no bucket
// provider, so it starts sooner: a command line that names an s3://, gs://,
// azblob://, memblob:// or fileblob:// store is run by trove-cloud, found
// beside trove or on PATH.
//
// Imports: cmd/internal/cli.
package main

import "github.com/trovekit/trove/cmd/internal/cli"

func main() { cli.Main(cli.WithCompanion("trove-cloud")) }
