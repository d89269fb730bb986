package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove/cas"
)

// TestBlobVerifyBLAKE3: a store with blake3 blobs (an embedder's) verifies
// in a build with BLAKE3. The trove command as make install builds it
// (trove_noblake3; make test runs this package that way too) says they
// were not verified, not that they are bad: exit 1, not 3.
func TestBlobVerifyBLAKE3(t *testing.T) {
	store := t.TempDir()
	if err := os.CopyFS(filepath.Join(store, "blobs"), os.DirFS("../../../cas/testdata/blake3store/blobs")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := trove(t, "", "--store", store, "blob", "verify", "--json")
	var got struct {
		Good        int
		Bad         []map[string]string
		NotVerified []string `json:"not_verified"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("blob verify --json: %v: %q", err, out)
	}
	if cas.BLAKE3.Linked() {
		if code != exitOK || got.Good != 3 || len(got.Bad) != 0 || len(got.NotVerified) != 0 {
			t.Fatalf("with BLAKE3: exit %d, %+v, %s", code, got, errOut)
		}
		return
	}
	if code != exitFailure || got.Good != 0 || len(got.Bad) != 0 || len(got.NotVerified) != 3 || !strings.Contains(errOut, "trove-cloud") {
		t.Fatalf("without BLAKE3: exit %d, %+v, stderr %q", code, got, errOut)
	}
}
