package cloud_test

import (
	"testing"
	"time"

	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// Stat reports the time List does, exactly, on a server whose HEAD and
// listing stamp an object at different moments (gofakes3: when the PUT
// begins and when the object is stored): Stat's time comes from a listing
// too. On a clock that moves 400 ms at every reading, a HEAD's time is a
// second or more off the listed one for most objects.
func TestStatTimeIsListTime(t *testing.T) {
	st := cloudtest.StartSlowClockS3(t, 400*time.Millisecond).New(t)
	ctx := t.Context()
	for _, name := range []string{"d/a", "d/b", "d/c", "d/e"} {
		if err := st.WriteFile(ctx, name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	appendSynced(t, st, "d/s", "one\n", "two\n")
	n := 0
	for info, err := range st.List(ctx, "d") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		got, err := st.Stat(ctx, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !got.ModTime.Equal(info.ModTime) || got.Size != info.Size {
			t.Errorf("%s: List says %v (%d bytes), Stat %v (%d bytes)", info.Name, info.ModTime, info.Size, got.ModTime, got.Size)
		}
	}
	if n != 5 {
		t.Errorf("listed %d files, want 5", n)
	}
}
