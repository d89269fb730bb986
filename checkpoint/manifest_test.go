package checkpoint

import (
	"errors"
	"strings"
	"testing"
)

func TestIDsAndKeys(t *testing.T) {
	for _, id := range []string{"cp-001", "0f8e4c2a-1b2c-4d5e-8f90-123456789abc", "a.b_c"} {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", ".x", "a/b", "..", "a b", strings.Repeat("x", 129), "é"} {
		if err := ValidID(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}
	if k := WorkspaceKey("/home/u/proj"); k != "--home-u-proj--" {
		t.Errorf("WorkspaceKey = %q", k)
	}
	if k := WorkspaceKey(`C:\Users\u`); k != "--C--Users-u--" {
		t.Errorf("WorkspaceKey(windows) = %q", k)
	}
	long := WorkspaceKey("/" + strings.Repeat("very-long-directory-name/", 20))
	if len(long) > 200 || WorkspaceKey("/a\x01b") == WorkspaceKey("/a\x02b") {
		t.Errorf("long or odd directories must get a bounded, distinct key: %q", long)
	}
}
