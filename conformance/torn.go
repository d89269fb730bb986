package conformance

import (
	"strings"

	"github.com/trovekit/trove/backend"
)

// tornCuts lists where a torn-tail test cuts data. Where the backend keeps
// directories (the OS disk, afero, memory: cheap writes) that is every
// byte. A bucket pays a request or two a cut, and every byte of a 2 KB
// file took 74 s on azurite; there it is every byte within tornNear of a
// line's end or the file's ends, where what a reader makes of the cut
// changes, and every tornStride-th byte between, where a line is cut in
// its middle and the reader's answer is the same at each.
func tornCuts(st backend.Storage, data string) []int {
	every := st.Capabilities().Directories
	var cuts []int
	near := func(n int) bool {
		if n <= tornNear || len(data)-n <= tornNear {
			return true
		}
		lo, hi := max(n-tornNear, 0), min(n+tornNear, len(data))
		return strings.Contains(data[lo:hi], "\n")
	}
	for n := 0; n <= len(data); n++ {
		if every || n%tornStride == 0 || near(n) {
			cuts = append(cuts, n)
		}
	}
	return cuts
}

const (
	tornNear   = 6
	tornStride = 11
)
