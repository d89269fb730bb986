package gcs_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The package links none of the Cloud Storage client and what it drags
// in: that is what it is for.
func TestLinksNoStorageClient(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the package's imports: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		for _, bad := range []string{"cloud.google.com/go/storage", "cloud.google.com/go/monitoring", "gocloud.dev/blob/gcsblob", "google.golang.org/grpc/xds", "github.com/envoyproxy/"} {
			if strings.HasPrefix(dep, bad) {
				t.Errorf("backend/open/gcs links %s", dep)
			}
		}
	}
}
