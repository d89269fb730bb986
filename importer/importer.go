package importer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/session"
)

// ErrUnknownSource is returned for a path whose format is not recognised.
var ErrUnknownSource = errors.New("importer: unknown source format")

// Result is what Import did with one source file.
type Result struct {
	Source    string `json:"source"`
	Format    string `json:"format"`
	SessionID string `json:"session_id"`
	Messages  int    `json:"messages"`
	Imported  bool   `json:"imported"`
	Reason    string `json:"reason,omitempty"` // why it was skipped, or what was left out
}

// Options tune Import.
type Options struct {
	From   string // pi, omp, claude, codex, spec002 or auto ("" is auto)
	DryRun bool
}

// Import imports every session file under paths into st. A directory with
// a blobs/ directory (a pi or oh-my-pi root) has its blobs put first, each
// checked against its name.
func Import(ctx context.Context, st *trove.Store, paths []string, o Options) ([]Result, error) {
	var out []Result
	var errs []error
	for _, p := range paths {
		n, err := importPiBlobs(ctx, st.Blobs(), filepath.Join(p, "blobs"), o.DryRun)
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 {
			out = append(out, Result{Source: filepath.Join(p, "blobs"), Format: "blobs", Messages: n, Imported: true})
		}
		files, err := sourceFiles(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			r, err := importFile(ctx, st, f, o)
			if err != nil {
				// One bad source does not stop the others.
				r.Reason = err.Error()
				errs = append(errs, err)
			}
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

func sourceFiles(p string) ([]string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

func importFile(ctx context.Context, st *trove.Store, path string, o Options) (Result, error) {
	r := Result{Source: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("import: %w", err)
	}
	format := o.From
	if format == "" || format == "auto" {
		format = detect(data)
	}
	r.Format = format
	sum := sha256.Sum256(data)
	r.SessionID = idFrom(sum[:])
	var conv *conversation
	switch format {
	case "pi", "omp":
		f, n, err := parsePi(data)
		if err != nil {
			return r, fmt.Errorf("import %s: %w", path, err)
		}
		r.Messages = n
		return finish(ctx, st, r, o, func() error { return writePi(ctx, st, r.SessionID, f) })
	case "claude":
		conv, err = parseClaude(data)
	case "codex":
		conv, err = parseCodex(data)
	case "spec002":
		conv, err = parseSpec002(data)
	default:
		r.Reason = "unknown format"
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("import %s: %w", path, err)
	}
	r.Messages = len(conv.msgs)
	if conv.sidechain > 0 {
		r.Reason = fmt.Sprintf("%d sidechain lines not imported", conv.sidechain)
	}
	if conv.damaged > 0 {
		r.Reason = strings.TrimPrefix(r.Reason+fmt.Sprintf("; %d damaged lines skipped", conv.damaged), "; ")
	}
	return finish(ctx, st, r, o, func() error { return write(ctx, st.Sessions(), r.SessionID, conv) })
}

func finish(ctx context.Context, st *trove.Store, r Result, o Options, write func() error) (Result, error) {
	if r.Messages == 0 {
		r.Reason = "no messages"
		return r, nil
	}
	if _, err := session.Find(ctx, st.Storage(), r.SessionID); err == nil {
		r.Reason = "already imported"
		return r, nil
	}
	if o.DryRun {
		r.Imported = true
		return r, nil
	}
	if err := write(); err != nil {
		if errors.Is(err, fs.ErrExist) {
			r.Reason = "already imported"
			return r, nil
		}
		return r, fmt.Errorf("import %s: %w", r.Source, err)
	}
	r.Imported = true
	return r, nil
}

// idFrom makes a uuid-shaped id (version 8, custom) from a content hash.
func idFrom(h []byte) string {
	b := append([]byte{}, h[:16]...)
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func detect(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	pi := false
	for i := 0; i < 20 && sc.Scan(); i++ {
		var probe struct {
			ParentID  *string         `json:"parent_id"`
			Type      string          `json:"type"`
			UUID      string          `json:"uuid"`
			SessionID string          `json:"sessionId"`
			Payload   json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &probe) != nil {
			continue
		}
		switch {
		case probe.UUID != "" || probe.SessionID != "":
			return "claude"
		case probe.Type == "session_meta" || probe.Payload != nil:
			return "codex"
		case probe.ParentID != nil:
			return "spec002"
		case probe.Type == "session":
			pi = true
		}
	}
	if pi {
		return "pi"
	}
	return "unknown"
}

// conversation is a parsed source: messages in file order, each with its
// parent's source id ("" for a root).
type conversation struct {
	cwd   string
	model string
	title string
	msgs  []srcMsg
	alias map[string]string // source id -> id of the message standing for it
	// sidechain counts subagent lines not imported, damaged lines whose
	// message does not parse.
	sidechain, damaged int
}

type srcMsg struct {
	id, parent string
	msg        json.RawMessage
}

func write(ctx context.Context, st *session.Store, id string, c *conversation) error {
	cwd := c.cwd
	if cwd == "" {
		cwd = "/imported"
	}
	h, err := st.Create(ctx, session.CreateOptions{ID: id, Cwd: cwd, Model: c.model, Title: c.title})
	if err != nil {
		return err
	}
	parentOf := func(m srcMsg) string {
		if a, ok := c.alias[m.parent]; ok {
			return a
		}
		return m.parent
	}
	// Only entries a later message branches from need their new id, which
	// costs a flush to learn.
	needed := map[string]bool{}
	prev := ""
	for _, m := range c.msgs {
		if p := parentOf(m); p != prev {
			needed[p] = true
		}
		prev = m.id
	}
	mapped := map[string]string{}
	last := ""
	for _, m := range c.msgs {
		m.parent = parentOf(m)
		if m.parent != last {
			if err := h.Flush(ctx); err != nil {
				return errors.Join(err, h.Close(ctx))
			}
			if to, ok := mapped[m.parent]; ok {
				if err := h.Session().Branch(to); err != nil {
					return errors.Join(err, h.Close(ctx))
				}
			}
		}
		if err := h.AppendMessage(ctx, m.msg); err != nil {
			return errors.Join(err, h.Close(ctx))
		}
		if needed[m.id] {
			if err := h.Flush(ctx); err != nil {
				return errors.Join(err, h.Close(ctx))
			}
			if leaf := h.Session().Leaf(); leaf != nil {
				mapped[m.id] = leaf.ID()
			}
		}
		last = m.id
	}
	return h.Close(ctx)
}

func millis(ts string) int64 {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

func assistant(content []any, model string, ts int64, stop string) json.RawMessage {
	if model == "" {
		model = "unknown"
	}
	if stop == "" {
		stop = "stop"
	}
	b, _ := json.Marshal(map[string]any{
		"role": "assistant", "content": content, "api": "unknown", "provider": "unknown", "model": model,
		"usage": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
		"stopReason": stop, "timestamp": ts,
	})
	return b
}
