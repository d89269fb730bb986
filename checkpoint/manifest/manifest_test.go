package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func sumRef(data []byte) string {
	h := sha256.Sum256(data)
	return "blob:sha256:" + hex.EncodeToString(h[:])
}

// plainManifest has Manifest's fields without its JSON methods, so
// encoding/json handles it by reflection: the reference for the codec.
type plainManifest Manifest

func sampleManifest() *Manifest {
	return &Manifest{
		Version: 1, ID: "cp-1", Kind: KindTree, CreatedAt: time.Date(2026, 2, 3, 4, 5, 6, 789, time.UTC),
		Session: "s\"q\\", Message: "m\u2028", Note: "Bash: rm -rf \"src\"", Root: "/home/ü/proj",
		DefaultIgnore: []string{".git/", "*.o"}, Ignore: []string{"tab\there"}, MaxFileSize: 123,
		Tree: sumRef([]byte("t")), Entries: 5,
		Files: []Entry{
			{Path: "a b/delta", Exists: true, Digest: sumRef([]byte("y")), Base: sumRef([]byte("b")), Delta: sumRef([]byte("d")), Size: 1, Mode: 0o644},
			{Path: "a b/ü😀.txt", Exists: true, Digest: sumRef([]byte("x")), Size: 1, Mode: 0o755, MTime: time.Unix(1700000000, 123456789).UTC()},
			{Path: "ctl\x01\x1f", Exists: false},
			{Path: "dir", Exists: true, Type: TypeDir, Mode: 0o700},
			{Path: "link", Exists: true, Type: TypeSymlink, Target: "../x\"y", MTime: time.Unix(5, 0).UTC()},
		},
		Skipped: []Skipped{{Path: "big", Size: 1 << 40, Reason: "size"}, {Path: "odd", Reason: "name"}},
	}
}

func TestManifestCodecAgreesWithEncodingJSON(t *testing.T) {
	m := sampleManifest()
	ours, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// What we write, encoding/json reads back equal.
	var viaStd plainManifest
	if err := json.Unmarshal(ours, &viaStd); err != nil {
		t.Fatalf("encoding/json cannot read our manifest: %v\n%s", err, ours)
	}
	if !reflect.DeepEqual(Manifest(viaStd), *m) {
		t.Fatalf("encoding/json read\n%+v\nwant\n%+v", viaStd, *m)
	}
	// What encoding/json writes, we read back equal.
	std, err := json.Marshal(plainManifest(*m))
	if err != nil {
		t.Fatal(err)
	}
	var back Manifest
	if err := back.UnmarshalJSON(std); err != nil {
		t.Fatalf("our decoder rejects encoding/json output: %v\n%s", err, std)
	}
	if !reflect.DeepEqual(back, *m) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", back, *m)
	}
	// Through the json package's entry points too (MarshalJSON is used).
	var again Manifest
	if err := json.Unmarshal(ours, &again); err != nil || !reflect.DeepEqual(again, *m) {
		t.Fatalf("json.Unmarshal round trip: %v", err)
	}
}

func TestManifestDecoderEdges(t *testing.T) {
	var m Manifest
	// Unknown fields of any shape are skipped; escapes and surrogates decode.
	in := `{"future":{"a":[1,2.5e3,-3,true,false,null,"x"]},"version":1,"id":"x","kind":"files",` +
		`"createdAt":"2026-01-01T00:00:00Z","files":[{"path":"\u00fc\ud83d\ude00\/\n","exists":false,"new":1}],"skipped":null}`
	if err := m.UnmarshalJSON([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if m.Files[0].Path != "ü😀/\n" {
		t.Fatalf("path %q", m.Files[0].Path)
	}
	for _, bad := range []string{"", "{", `{"version":}`, `{"files":[{]}`, `{"id":"x"} trailing`, `{"id":"\x01"}`, `{"files":[{"mode":"999"}]}`, `{"createdAt":"yesterday"}`, `[1]`} {
		if err := m.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	// Random damage never panics.
	good, _ := sampleManifest().MarshalJSON()
	rng := rand.New(rand.NewPCG(2, 2))
	for range 3000 {
		b := []byte(string(good))
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.UintN(256))
		}
		_ = m.UnmarshalJSON(b[:rng.IntN(len(b)+1)])
	}
}

func TestManifestValidate(t *testing.T) {
	ref := sumRef([]byte("x"))
	file := func(p string) Entry { return Entry{Path: p, Exists: true, Digest: ref, Mode: 0o644} }
	base := func(files ...Entry) *Manifest {
		return &Manifest{Version: 1, ID: "id", Kind: KindFiles, Files: files}
	}
	good := base(file("a"), Entry{Path: "b", Type: TypeDir, Exists: true}, file("b/c"), Entry{Path: "d"})
	if err := good.Validate("id"); err != nil {
		t.Fatalf("valid manifest refused: %v", err)
	}
	bad := map[string]*Manifest{
		"version":       {Version: 3, ID: "id", Kind: KindFiles},
		"id":            {Version: 1, ID: "other", Kind: KindFiles},
		"kind":          {Version: 1, ID: "id", Kind: "weird"},
		"absolute":      base(file("/etc/passwd")),
		"dotdot":        base(file("../x")),
		"inner dotdot":  base(file("a/../../x")),
		"dot":           base(file("./a")),
		"empty elem":    base(file("a//b")),
		"trailing /":    base(file("a/")),
		"nul":           base(file("a\x00b")),
		"backslash":     base(file(`a\b`)),
		"drive":         base(file("C:x")),
		"not utf8":      base(file("a\xff")),
		"empty":         base(file("")),
		"duplicate":     base(file("a"), file("a")),
		"unsorted":      base(file("b"), file("a")),
		"below file":    base(file("a"), file("a/b")),
		"below symlink": base(Entry{Path: "l", Exists: true, Type: TypeSymlink, Target: "/"}, file("l/x")),
		"bad digest":    base(Entry{Path: "a", Exists: true, Digest: "sha256:abc"}),
		"no target":     base(Entry{Path: "l", Exists: true, Type: TypeSymlink}),
		"bad type":      base(Entry{Path: "a", Exists: true, Type: "fifo"}),
		"bad delta":     base(Entry{Path: "a", Exists: true, Digest: ref, Delta: ref}),
	}
	for name, m := range bad {
		err := m.Validate("id")
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !errors.Is(err, ErrUnsafePath) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v wraps neither ErrUnsafePath nor ErrCorrupt", name, err)
		}
	}
}

// plainRel never accepts what ValidPath's full checks refuse.
func TestPlainRelAgrees(t *testing.T) {
	full := func(p string) error {
		// ValidPath without its fast path.
		if p == "" || p[0] == '/' || strings.ContainsAny(p, "\x00\\") || len(p) >= 2 && p[1] == ':' || !utf8.ValidString(p) {
			return ErrUnsafePath
		}
		for elem := range strings.SplitSeq(p, "/") {
			if elem == "" || elem == "." || elem == ".." {
				return ErrUnsafePath
			}
		}
		if path.Clean(p) != p {
			return ErrUnsafePath
		}
		return nil
	}
	cases := []string{"", "/", "a", "a/b", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/..", "a/../b", "...", ".a", "a.", "c:", "c:/x", "ac:", "a\\b", "a\x00b", "é", "a b", "a\tb", "a/b/c.txt"}
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "ab./\\:\x00 é"
	for range 20000 {
		b := make([]byte, rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, p := range cases {
		if plainRel(p) && full(p) != nil {
			t.Errorf("plainRel accepts %q", p)
		}
		if (ValidPath(p) == nil) != (full(p) == nil) {
			t.Errorf("ValidPath(%q) = %v", p, ValidPath(p))
		}
		// A name below a valid directory is valid as that path is; a
		// name never holds a slash.
		for _, dir := range []string{"d", "ac:", "a/b"} {
			if got, want := ValidName(p) == nil, full(dir+"/"+p) == nil && !strings.Contains(p, "/"); got != want {
				t.Errorf("ValidName(%q) = %v, ValidPath(%q) accepts: %v", p, ValidName(p), dir+"/"+p, want)
			}
		}
	}
	if err := ValidName(".."); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("ValidName(\"..\") = %v, want ErrUnsafePath", err)
	}
}
