// Command trove keeps what AI coding agents must not lose: sessions, blobs,
// checkpoints and run logs, on local disk or in memory. It links no bucket
// provider, so it starts sooner: a command line that names an s3://, gs://,
// azblob://, memblob:// or fileblob:// store is run by trove-cloud, found
// beside trove or on PATH.
//
// Imports: cmd/internal/cli.
//
// GOMAXPROCS is set from the CPU limit of the process's cgroup at its
// start and not followed after (updatemaxprocs=0): following it starts
// a goroutine before main, which wakes a second thread, and has sysmon
// read the cgroup's files, about 0.2 ms of a command's few.
//
//go:debug updatemaxprocs=0
package main

import "github.com/trovekit/trove/cmd/internal/cli"

func main() { cli.Main(cli.WithCompanion("trove-cloud")) }
