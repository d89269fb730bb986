package treehash

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempPrefix starts the names of the temp files trove writes beside a
// workspace's files; they are left out.
const TempPrefix = ".trove-tmp-"

// Options say which entries are hashed.
type Options struct {
	// FollowSymlinks hashes every entry but directories, a symlink as the
	// content of its target. Without it only regular files are hashed.
	FollowSymlinks bool
}

// Hash returns the hex sha256 of each file under dir, keyed by its slash
// path relative to dir.
func Hash(dir string, o Options) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || strings.HasPrefix(d.Name(), TempPrefix) {
			return err
		}
		if d.IsDir() || !o.FollowSymlinks && !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(data)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	return out, err
}
