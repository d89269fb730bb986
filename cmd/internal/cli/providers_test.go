package cli

// The tests run command lines in process against buckets, as trove-cloud
// does: they link the providers the trove command leaves to it.
import (
	_ "github.com/trovekit/trove/backend/open/azure"
	_ "github.com/trovekit/trove/backend/open/gcs"
	_ "github.com/trovekit/trove/backend/open/localblob"
	_ "github.com/trovekit/trove/backend/open/s3"
)
