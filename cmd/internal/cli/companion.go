package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/open"
)

// The trove command links no bucket provider: their SDKs' package
// initialisation and page faults cost every process about 2-4 ms at start
// (measured on `trove version` and `trove search`), a third of a search.
// trove-cloud links them all; trove hands it any command line that names
// a bucket URL.

// companionEnv is set in the companion's environment: a companion that is
// trove after all (a link to it) must not hand the command line on again.
const companionEnv = "TROVE_COMPANION"

// bucketScheme returns the scheme of the first argument (or --flag=value)
// that is a URL of a scheme missing says this program does not serve
// (open.Missing), or "".
func bucketScheme(args []string, missing func(scheme string) bool) string {
	for _, arg := range args {
		if strings.HasPrefix(arg, "-") {
			if _, v, ok := strings.Cut(arg, "="); ok {
				arg = v
			}
		}
		if scheme, _, ok := strings.Cut(arg, "://"); ok && missing(scheme) {
			return scheme
		}
	}
	return ""
}

// findCompanion finds name beside this program's executable, else on PATH.
func findCompanion(name string) (string, bool) {
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	p, err := exec.LookPath(name)
	return p, err == nil
}

// openURL is open.URL, whose error for a bucket scheme this program lacks
// says what to install.
func openURL(ctx context.Context, raw string, opts ...open.Option) (backend.Storage, error) {
	st, err := open.URL(ctx, raw, opts...)
	if scheme, _, _ := strings.Cut(raw, "://"); err != nil && open.Missing(scheme) {
		return nil, fmt.Errorf("open %q: %w: %s:// stores are opened by trove-cloud, the trove command with the bucket "+
			"providers linked in: put it beside trove or on PATH (go install github.com/trovekit/trove/cmd/trove-cloud@latest)",
			raw, open.ErrUnknownScheme, scheme)
	}
	return st, err
}
