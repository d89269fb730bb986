package importer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/redact"
)

// A pi root's text blob (a tool output) holding a secret goes in redacted,
// under the ref of its redacted bytes, which the imported session names;
// the blob as it was is not in the store. Binary blobs go in as they are.
func TestImportRedactsPiBlobs(t *testing.T) {
	ctx := context.Background()
	const secret = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	text := []byte("deploying\nSLACK_BOT_TOKEN=" + secret + "\ndone\n")
	sum := sha256.Sum256(text)
	oldHex := hex.EncodeToString(sum[:])
	const png = "42c9f08a57c781c9e09c3b5e96194b4c6402fb6c84a56b69f5ab38d14e24fb3d"

	root := t.TempDir()
	heldout := "testdata/heldout/pi"
	sess, err := os.ReadFile(filepath.Join(heldout, "sessions/--home-dev-web--/2026-11-22T12-00-00-000Z_5b1e7c2d-8a9f-4b3c-9d2e-1f0a6b5c4d3e.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The session names the text blob where it named the image, and the
	// image in a second block.
	sess = bytes.Replace(sess, []byte("blob:sha256:"+png), []byte("blob:sha256:"+oldHex), 1)
	dir := filepath.Join(root, "sessions", "--home-dev-web--")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir, 0o755))
	must(os.MkdirAll(filepath.Join(root, "blobs"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "s.jsonl"), sess, 0o644))
	must(os.WriteFile(filepath.Join(root, "blobs", oldHex), text, 0o644))
	img, err := os.ReadFile(filepath.Join(heldout, "blobs", png))
	must(err)
	must(os.WriteFile(filepath.Join(root, "blobs", png), img, 0o644))

	s, err := trove.Open(ctx, t.TempDir())
	must(err)
	defer s.Close()
	d, err := redact.New()
	must(err)
	opts := Options{Redact: func(b []byte) ([]byte, error) {
		out, _, err := d.JSONLines(b, nil)
		return out, err
	}}
	res, err := Import(ctx, s, []string{root}, opts)
	if err != nil {
		t.Fatalf("import: %v %+v", err, res)
	}
	oldRef, _ := cas.ParseRef("blob:sha256:" + oldHex)
	if ok, err := s.Blobs().Has(ctx, oldRef); err != nil || ok {
		t.Fatalf("the unredacted tool output is in the store: %v %v", ok, err)
	}
	imgRef, _ := cas.ParseRef("blob:sha256:" + png)
	if ok, err := s.Blobs().Has(ctx, imgRef); err != nil || !ok {
		t.Fatalf("the image was not imported as it is: %v %v", ok, err)
	}
	var sid string
	for _, r := range res {
		if r.SessionID != "" {
			sid = r.SessionID
		}
	}
	tr, _, err := s.ReadSession(ctx, sid)
	must(err)
	var all strings.Builder
	for _, e := range tr.Entries() {
		all.Write(e.JSON())
	}
	if strings.Contains(all.String(), oldHex) {
		t.Fatal("the session still names the unredacted blob")
	}
	found := false
	for ref, err := range s.Blobs().Walk(ctx) {
		must(err)
		b, err := s.Blobs().Get(ctx, ref)
		must(err)
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("blob %s holds the secret", ref)
		}
		if bytes.Contains(b, []byte("[REDACTED:")) {
			found = true
			// Entries resolve an image's blob to its base64.
			if !strings.Contains(all.String(), base64.StdEncoding.EncodeToString(b)) {
				t.Errorf("the session does not name the redacted blob %s", ref)
			}
		}
	}
	if !found {
		t.Fatal("no redacted blob in the store")
	}
}
