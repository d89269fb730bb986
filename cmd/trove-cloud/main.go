// Command trove-cloud is the trove command with every bucket provider
// linked in: s3://, gs://, azblob://, memblob:// and fileblob:// stores.
// trove runs it for command lines that name one; it can be run directly.
//
// Imports: cmd/internal/cli, backend/open/azure, backend/open/gcs,
// backend/open/localblob and backend/open/s3.
package main

import (
	_ "github.com/trovekit/trove/backend/open/azure"     // azblob://
	_ "github.com/trovekit/trove/backend/open/gcs"       // gs://
	_ "github.com/trovekit/trove/backend/open/localblob" // memblob://, fileblob://
	_ "github.com/trovekit/trove/backend/open/s3"        // s3://
	"github.com/trovekit/trove/cmd/internal/cli"
)

func main() { cli.Main() }
