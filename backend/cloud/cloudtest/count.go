package cloudtest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Counts is a number of requests by kind: the HTTP method, except that a GET
// of a bucket itself (no object key: a listing) counts as "LIST".
type Counts map[string]int

// Total is the number of requests of every kind.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String reads like "11 (5 HEAD, 5 LIST, 1 PUT)", kinds by name.
func (c Counts) String() string {
	kinds := slices.Sorted(maps.Keys(c))
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
		}
	}
	return fmt.Sprintf("%d (%s)", c.Total(), strings.Join(parts, ", "))
}

// Counter counts the requests a server started with its Wrap receives. Safe
// for concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts Counts
	log    []string
}

// NewCounter returns a Counter with nothing counted.
func NewCounter() *Counter { return &Counter{counts: Counts{}} }

// Wrap is a handler wrapper for StartS3 or StartGCS:
//
//	c := cloudtest.NewCounter()
//	st := cloudtest.StartS3(t, c.Wrap).New(t)
func (c *Counter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := requestKind(r)
		c.mu.Lock()
		c.counts[kind]++
		c.log = append(c.log, kind+" "+r.URL.RequestURI())
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// requestKind is r's method, or "LIST" for a GET with no object key: a
// path-style bucket URL (/bucket or /bucket/) on S3, or the JSON API's
// object listing (/storage/v1/b/bucket/o) on GCS.
func requestKind(r *http.Request) string {
	if r.Method != http.MethodGet {
		return r.Method
	}
	p := strings.Trim(r.URL.Path, "/")
	if !strings.Contains(p, "/") || strings.HasSuffix(p, "/o") && strings.HasPrefix(p, "storage/v1/b/") {
		return "LIST"
	}
	return r.Method
}

// Counts returns a copy of the counts so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Log returns the requests so far in arrival order, each as "KIND URI".
func (c *Counter) Log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// Reset forgets everything counted.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = Counts{}
	c.log = nil
}

// During counts the requests made while fn runs (none may run concurrently
// with it from elsewhere, or they are counted too).
func (c *Counter) During(fn func()) Counts {
	c.Reset()
	fn()
	return c.Counts()
}

// AtMost fails tb, listing the requests, when fn makes more than max
// requests in all. It returns the counts.
func (c *Counter) AtMost(tb testing.TB, what string, max int, fn func()) Counts {
	tb.Helper()
	c.Reset()
	fn()
	got := c.Counts()
	if got.Total() > max {
		tb.Errorf("%s: %v requests, want at most %d:\n\t%s", what, got, max, strings.Join(c.Log(), "\n\t"))
	}
	return got
}

// StartCountingS3 starts an S3 server as StartS3 does, counting every
// request it receives.
func StartCountingS3(tb testing.TB) (*S3, *Counter) {
	c := NewCounter()
	return StartS3(tb, c.Wrap), c
}
