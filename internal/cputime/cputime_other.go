//go:build !unix

package cputime

import "time"

// Self is 0 where getrusage is missing: benchmarks then report wall time only.
func Self() time.Duration { return 0 }
