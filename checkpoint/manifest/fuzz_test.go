package manifest

import (
	"strings"
	"testing"
)

// FuzzManifest reads arbitrary manifests: no panic, and a manifest that
// validates has only clean relative paths and well-formed refs, so a
// rewind of it can never leave the workspace or fetch a malformed ref.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"version":1,"id":"c1","kind":"tree","createdAt":"2026-01-01T00:00:00Z","files":[{"path":"a.txt","exists":true,"digest":"blob:sha256:` + strings.Repeat("ab", 32) + `","size":3,"mode":"0644"}]}`))
	f.Add([]byte(`{"version":1,"id":"c1","kind":"files","files":[{"path":"../etc/passwd","exists":true}]}`))
	f.Add([]byte(`{"version":1,"id":"c1","kind":"tree","files":[{"path":"l","exists":true,"type":"symlink","target":"/etc"}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Manifest
		if err := m.UnmarshalJSON(data); err != nil {
			return
		}
		if err := m.Validate("c1"); err != nil {
			return
		}
		for _, e := range m.Files {
			if e.Path == "" || strings.HasPrefix(e.Path, "/") || e.Path == ".." || strings.HasPrefix(e.Path, "../") ||
				strings.Contains(e.Path, "/../") || strings.HasSuffix(e.Path, "/..") || strings.ContainsRune(e.Path, 0) {
				t.Fatalf("a validated manifest holds the path %q", e.Path)
			}
			if e.Digest != "" && !ValidRef(e.Digest) {
				t.Fatalf("a validated manifest holds the ref %q", e.Digest)
			}
		}
		_ = m.Refs()
	})
}
