package tree

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// isoMillis answers as the regexp it replaced, on edge cases and on
// random one-byte changes of a valid timestamp.
func TestIsoMillisAsRegexp(t *testing.T) {
	re := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	const good = "2026-02-16T10:00:00.123Z"
	cases := []string{good, "", "2026-02-16T10:00:00Z", "2026-02-16T10:00:00.123z", good + "\n", "\n" + good[1:],
		"2026-02-16 10:00:00.123Z", "2026-02-16T10:00:00,123Z", "20260-2-16T10:00:00.123Z", "2026-02-16T10:00:00.1234",
		"٢٠٢٦-02-16T10:00:00.123Z", "2026-02-16T10:00:00.12٣Z", "9999-99-99T99:99:99.999Z", good + good}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := []byte(good)
		b[rng.IntN(len(b))] = byte(rng.IntN(256))
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := isoMillis(s), re.MatchString(s); got != want {
			t.Errorf("isoMillis(%q) = %v, the regexp says %v", s, got, want)
		}
	}
}
