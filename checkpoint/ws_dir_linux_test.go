//go:build linux

package checkpoint

import (
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
)

// A run of slow raw stats (a disk read each) makes the workspace use
// ordinary system calls for a while; slow calls between quick ones (a busy
// machine) do not.
func TestRawStatsStopWhenSlow(t *testing.T) {
	w := &dirWorkspace{born: time.Now()}
	if !w.rawNow() {
		t.Fatal("a new workspace makes ordinary stats; want raw")
	}
	now := time.Since(w.born)
	for i := range 10 * rawSlowRun {
		slow := i%rawSlowRun != 0 // never rawSlowRun in a row
		d := rawSlow / 10
		if slow {
			d = 100 * rawSlow
		}
		if !w.rawTook(d, now) {
			t.Fatalf("call %d: raw stats stopped after slow calls between quick ones", i)
		}
	}
	w.rawTook(rawSlow/10, now) // a quick one ends the last run
	for i := range rawSlowRun {
		more := w.rawTook(100*rawSlow, now)
		if last := i == rawSlowRun-1; more == last {
			t.Fatalf("slow call %d of %d in a row: raw goes on = %v", i+1, rawSlowRun, more)
		}
	}
	if w.rawNow() {
		t.Fatal("raw stats go on after a run of slow ones")
	}
	if after := time.Duration(w.rawAfter.Load()); after != now+rawPause {
		t.Fatalf("raw stats resume at %v, want %v", after, now+rawPause)
	}
	w.rawAfter.Store(int64(time.Since(w.born))) // the pause over
	if !w.rawNow() || w.rawOff.Load() {
		t.Fatal("raw stats do not resume after the pause")
	}
}

// Raw stats are the caller's choice: a long-lived process (the library's
// default) keeps ordinary system calls, which a hung mount cannot turn
// into a stalled process.
func TestRawStatsOnlyWhenAsked(t *testing.T) {
	for _, raw := range []bool{false, true} {
		var opts []Option
		if raw {
			opts = append(opts, WithRawStats())
		}
		m, err := OpenDir(t.Context(), mem.New(), t.TempDir(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.ws.(*dirWorkspace).rawOK.Load(); got != raw {
			t.Errorf("WithRawStats given: %v; raw stats made: %v", raw, got)
		}
		m.Close()
	}
}
