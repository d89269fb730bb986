package trove_test

import (
	"errors"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/trovekit/trove"

// TestDocImports holds every package's comment (in doc.go) to its
// "Imports:" line: each thing it names is imported, and each import is
// named. Every package but a command has one. The line lists, up to its
// first full stop, "the standard library" and import paths separated by
// commas or "and": trove's by their path in the module ("trove" for the
// root), others by their path or some of its elements ("afero",
// "klauspost/compress/zstd", "aws-sdk-go-v2"), which name every package
// under them ("gocloud.dev/blob"). A parenthesis says why and is not read.
// Imports are those of the package's non-test files on Linux, macOS and
// Windows together.
func TestDocImports(t *testing.T) {
	dirs := packageDirs(t)
	if len(dirs) < 20 {
		t.Fatalf("found %d packages; is the test running at the module root?", len(dirs))
	}
	for _, dir := range dirs {
		imports, isCommand := importsOf(t, dir)
		claim, err := importsClaim(dir)
		switch {
		case err != nil:
			t.Errorf("%s: %v", dir, err)
			continue
		case claim == nil && isCommand:
			continue
		case claim == nil:
			t.Errorf("%s: the package comment has no \"Imports:\" line; it imports %s", dir, strings.Join(imports, ", "))
			continue
		}
		for _, item := range claim {
			if !slices.ContainsFunc(imports, func(p string) bool { return covers(item, p) }) {
				t.Errorf("%s: Imports: names %q, which the package does not import (it imports %s)", dir, item, strings.Join(imports, ", "))
			}
		}
		for _, p := range imports {
			if !slices.ContainsFunc(claim, func(item string) bool { return covers(item, p) }) {
				t.Errorf("%s: Imports: does not name %s, which the package imports", dir, p)
			}
		}
	}
}

// TestDocImportsCatchesWrongClaims runs the claim reader and matcher on
// lines that are wrong, so the check above can fail.
func TestDocImportsCatchesWrongClaims(t *testing.T) {
	imports := []string{"std", "backend", "github.com/spf13/afero", "gocloud.dev/blob/driver"}
	for _, tc := range []struct {
		line      string
		uncovered []string // imports the line leaves out
		extra     []string // items that name no import
	}{
		{"Imports: the standard library, backend, afero and gocloud.dev/blob.", nil, nil},
		{"Imports: the standard library, backend, cas (the blob store), afero, gocloud.dev. Nothing else.", nil, []string{"cas"}},
		{"Imports: the standard library only.", []string{"backend", "github.com/spf13/afero", "gocloud.dev/blob/driver"}, nil},
		{"Imports: the standard library; nothing of trove's, no afero.", []string{"backend", "github.com/spf13/afero", "gocloud.dev/blob/driver"}, nil},
		{"Imports: backend/cloud, backend (its errors), spf13/afero, gocloud.dev/blob.", []string{"std"}, []string{"backend/cloud"}},
	} {
		claim := parseClaim(tc.line)
		var uncovered, extra []string
		for _, p := range imports {
			if !slices.ContainsFunc(claim, func(item string) bool { return covers(item, p) }) {
				uncovered = append(uncovered, p)
			}
		}
		for _, item := range claim {
			if !slices.ContainsFunc(imports, func(p string) bool { return covers(item, p) }) {
				extra = append(extra, item)
			}
		}
		if !slices.Equal(uncovered, tc.uncovered) || !slices.Equal(extra, tc.extra) {
			t.Errorf("%q (read as %q): leaves out %q, names %q extra; want %q and %q", tc.line, claim, uncovered, extra, tc.uncovered, tc.extra)
		}
	}
}

// packageDirs lists the module's package directories, slash-separated and
// relative to the root ("." for the root).
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if _, err := build.ImportDir(path, 0); err == nil {
			dirs = append(dirs, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// importsOf returns what dir's non-test files import on Linux, macOS and
// Windows: "std" for the standard library (once), trove's packages by
// their path in the module, others in full.
func importsOf(t *testing.T, dir string) (imports []string, isCommand bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		ctx := build.Default
		ctx.GOOS = goos
		pkg, err := ctx.ImportDir(dir, 0)
		if err != nil {
			if _, ok := errors.AsType[*build.NoGoError](err); ok {
				continue
			}
			t.Fatalf("%s on %s: %v", dir, goos, err)
		}
		isCommand = pkg.Name == "main"
		for _, p := range pkg.Imports {
			switch {
			case p == module:
				p = "trove"
			case strings.HasPrefix(p, module+"/"):
				p = strings.TrimPrefix(p, module+"/")
			case p == "C", !strings.Contains(strings.Split(p, "/")[0], "."):
				p = "std"
			}
			seen[p] = true
		}
	}
	for p := range seen {
		imports = append(imports, p)
	}
	slices.Sort(imports)
	return imports, isCommand
}

// importsClaim reads the Imports: line of dir's package comment (doc.go's,
// or the one file's that has it); nil when there is none.
func importsClaim(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if f.Doc == nil {
			continue
		}
		text := f.Doc.Text()
		if i := strings.Index(text, "Imports:"); i >= 0 {
			para, _, _ := strings.Cut(text[i:], "\n\n")
			return parseClaim(para), nil
		}
	}
	return nil, nil
}

// parseClaim splits "Imports: a, b (why) and c. More prose." into its
// items, "std" for the standard library. What follows the list's first
// full stop or semicolon is prose.
func parseClaim(para string) []string {
	para = strings.TrimPrefix(strings.Join(strings.Fields(para), " "), "Imports:")
	// Parentheses first: they may hold commas and full stops.
	var b strings.Builder
	depth := 0
	for _, r := range para {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth = max(depth-1, 0)
		case depth == 0:
			b.WriteRune(r)
		}
	}
	para = b.String()
	// The list ends at its first full stop or semicolon.
	if i := strings.Index(para+" ", ". "); i >= 0 {
		para = para[:i]
	}
	para, _, _ = strings.Cut(para, ";")
	items := []string{} // not nil: "Imports: nothing." is a claim
	for _, part := range strings.Split(para, ",") {
		for _, item := range strings.Split(part, " and ") {
			item = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(item), "and "))
			switch item {
			case "", "nothing":
			case "the standard library", "the standard library only":
				items = append(items, "std")
			default:
				items = append(items, item)
			}
		}
	}
	return items
}

// covers reports whether a claimed item names import p.
func covers(item, p string) bool {
	if item == p {
		return true
	}
	if p == "std" || p == "trove" || !strings.Contains(strings.Split(p, "/")[0], ".") {
		return false // trove's own and the standard library by exact name only
	}
	return strings.HasPrefix(p, item+"/") || strings.HasSuffix(p, "/"+item) || strings.Contains(p, "/"+item+"/")
}
