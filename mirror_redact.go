package trove

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/redact"
)

// MirrorRedact makes Mirror write a redacted copy: every secret d finds in
// sessions, transcripts, metadata, run logs and the text blobs they refer
// to (tool outputs) is replaced by [REDACTED:detector]; such a blob gets
// the ref of its redacted bytes, and the files naming it name that. Only
// blobs these files refer to are copied. Checkpoints (workspace
// snapshots, files of the user's) are left out, and counted in the
// report's CheckpointsLeftOut: a redacted snapshot would rewind a
// workspace to content it never had, and a copy of the snapshot as it is
// would keep every secret of the workspace (.env files). The source is
// only read.
func MirrorRedact(d *redact.Detector) MirrorOption {
	return func(c *mirrorConfig) { c.redact = d }
}

// refText finds blob refs inside any string: a tool output's notice names
// its ref too.
var refText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`blob:(?:sha256|blake3):[0-9a-f]{64}`) })

// redactMode checks that a redacted Mirror reads plaintext and writes
// what dst is: an encrypted store is read and written through its key
// (a *crypt.Storage), never as raw objects, and no key is copied.
func redactMode(ctx context.Context, src, dst backend.Storage) error {
	for _, side := range []struct {
		name string
		st   backend.Storage
	}{{"the source", src}, {"the destination", dst}} {
		if _, open := side.st.(*crypt.Storage); open {
			continue
		}
		enc, err := crypt.IsEncrypted(ctx, side.st)
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		if enc {
			return fmt.Errorf("mirror --redact: %s: %w", side.name, crypt.ErrEncrypted)
		}
	}
	return nil
}

// redactMirror is one redacted Mirror's state: the two blob stores and
// what each source blob became.
type redactMirror struct {
	d        *redact.Detector
	src, dst *cas.Store
	dry      bool
	refs     map[string]string // source ref -> destination ref
}

func mirrorRedacted(ctx context.Context, src, dst backend.Storage, files []backend.Info, cfg mirrorConfig) (MirrorReport, error) {
	rep := MirrorReport{DryRun: cfg.dryRun}
	rm := &redactMirror{d: cfg.redact, dry: cfg.dryRun, refs: map[string]string{}}
	var err error
	if rm.src, err = cas.Open(ctx, src, cas.WithDir("blobs")); err != nil {
		return rep, fmt.Errorf("mirror: %w", err)
	}
	if !rm.dry {
		if rm.dst, err = cas.Open(ctx, dst, cas.WithDir("blobs")); err != nil {
			return rep, fmt.Errorf("mirror: %w", err)
		}
	}
	var todo []backend.Info
	for _, f := range files {
		switch {
		case isCheckpointFile(f.Name):
			rep.CheckpointsLeftOut++
		case !strings.HasPrefix(f.Name, "blobs/"):
			todo = append(todo, f)
		}
	}
	for i, f := range todo {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		act, err := rm.file(ctx, src, dst, f)
		if err != nil {
			return rep, fmt.Errorf("mirror: %s: %w", f.Name, err)
		}
		rep.note(act, i+1, len(todo), cfg.progress)
	}
	return rep, nil
}

// isCheckpointFile says whether name is a checkpoint's: its manifest, or
// anything else under a checkpoints directory (stat caches).
func isCheckpointFile(name string) bool {
	return strings.HasPrefix(name, "checkpoints/") || strings.Contains(name, "/checkpoints/")
}

// file redacts and writes one file, the blobs it names first; a file
// whose redacted bytes dst already holds is skipped.
func (rm *redactMirror) file(ctx context.Context, src, dst backend.Storage, f backend.Info) (MirrorAction, error) {
	act := MirrorAction{Name: f.Name}
	data, err := src.ReadFile(ctx, f.Name)
	if err != nil {
		return act, err
	}
	out := data
	// The config holds the user's rules (patterns, not secrets); pins are
	// empty; binary files are copied as they are.
	if f.Name != ConfigFile && !strings.HasPrefix(f.Name, pinDir+"/") && utf8.Valid(data) {
		redactFile := rm.d.JSONLines
		if strings.HasSuffix(f.Name, ".json") {
			redactFile = rm.d.JSON // one document, maybe over many lines
		}
		if out, _, err = redactFile(data, rm.edit(ctx)); err != nil {
			return act, err
		}
	}
	act.Size = int64(len(out))
	old, err := dst.ReadFile(ctx, f.Name)
	switch {
	case err == nil && bytes.Equal(old, out):
		act.Reason = "identical"
		return act, nil
	case err == nil:
		act.Reason = "differs"
	case errors.Is(err, fs.ErrNotExist):
		act.Reason = "missing"
	default:
		return act, err
	}
	act.Copied = true
	if rm.dry {
		return act, nil
	}
	if err := dst.EnsureDir(ctx, backend.Dir(f.Name)); err != nil {
		return act, err
	}
	return act, dst.WriteFile(ctx, f.Name, out)
}

// edit swaps each blob ref in a string for the ref of its copy.
func (rm *redactMirror) edit(ctx context.Context) func(string) (string, error) {
	return func(s string) (string, error) {
		if !strings.Contains(s, "blob:") {
			return s, nil
		}
		var ferr error
		out := refText().ReplaceAllStringFunc(s, func(ref string) string {
			n, err := rm.blob(ctx, ref)
			if err != nil && ferr == nil {
				ferr = err
			}
			return n
		})
		return out, ferr
	}
}

// blob copies the blob ref names, redacted when it is text, and returns
// the ref of the copy.
func (rm *redactMirror) blob(ctx context.Context, ref string) (string, error) {
	if n, ok := rm.refs[ref]; ok {
		return n, nil
	}
	r, err := cas.ParseRef(ref)
	if err != nil {
		return ref, err
	}
	data, err := rm.src.Get(ctx, r)
	if errors.Is(err, fs.ErrNotExist) {
		// Dangling in the source too (fsck reports it): name it as it was.
		rm.refs[ref] = ref
		return ref, nil
	}
	if err != nil {
		return ref, err
	}
	if utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 {
		red, _ := rm.d.Redact(string(data))
		data = []byte(red)
	}
	var nr cas.Ref
	if rm.dry {
		nr, err = cas.Sum(cas.SHA256, data)
	} else {
		nr, err = rm.dst.Put(ctx, data)
	}
	if err != nil {
		return ref, err
	}
	rm.refs[ref] = nr.String()
	return nr.String(), nil
}
