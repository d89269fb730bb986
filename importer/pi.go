package importer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/session/tree"
)

// parsePi reads a pi session file of any version leniently, as the reference
// does: lines that do not parse are dropped, the header is the first line
// that parses, v1 entries get ids chained in file order, v2 hookMessage
// roles become custom.
func parsePi(data []byte) (*v3, int, error) {
	p := &piParser{}
	if err := eachLine(data, p.line); err != nil {
		return nil, 0, err
	}
	if !p.header {
		return nil, 0, fmt.Errorf("no session header: %w", tree.ErrInvalid)
	}
	p.f.updated = piUpdated(p.f.entries)
	return &p.f, p.msgs, nil
}

// piParser is parsePi's state between lines.
type piParser struct {
	f       v3
	version int
	header  bool
	msgs    int
	prev    any
}

func (p *piParser) line(b []byte) error {
	var v map[string]any
	if json.Unmarshal(b, &v) != nil || v == nil {
		return nil
	}
	if !p.header {
		if v["type"] != "session" {
			return fmt.Errorf("first entry is not a session header: %w", tree.ErrInvalid)
		}
		p.header = true
		p.version = 1
		if n, ok := v["version"].(float64); ok {
			p.version = int(n)
		}
		f := &p.f
		f.cwd, _ = v["cwd"].(string)
		f.srcID, _ = v["id"].(string)
		f.title, _ = v["title"].(string)
		f.parent, _ = v["parentSession"].(string)
		if ts, ok := v["timestamp"].(string); ok {
			f.created, _ = time.Parse(time.RFC3339Nano, ts)
		}
		if f.cwd == "" {
			f.cwd = "/imported"
		}
		return nil
	}
	if v["type"] == "session" {
		return nil
	}
	if p.version < 2 {
		// Chained from the header's id and the line, so a session read
		// again (a watcher's restart, an import of the final file) gets
		// the same ids.
		prev, _ := p.prev.(string)
		if prev == "" {
			prev = p.f.srcID
		}
		sum := sha256.Sum256(append([]byte(prev+"\n"), b...))
		v["id"] = hex.EncodeToString(sum[:4])
		v["parentId"] = p.prev
		p.prev = v["id"]
		delete(v, "firstKeptEntryIndex") // its entry ids are new; keeping an index would lie
	}
	if m, ok := v["message"].(map[string]any); ok && v["type"] == "message" {
		if p.version < 3 && m["role"] == "hookMessage" {
			m["role"] = "custom"
		}
		if m["role"] == "assistant" {
			strictAssistant(m)
		}
		p.msgs++
	}
	p.f.entries = append(p.f.entries, v)
	return nil
}

// piUpdated is when a pi session was last written to: its last entry's time.
func piUpdated(entries []map[string]any) time.Time {
	var t time.Time
	if n := len(entries); n > 0 {
		if ts, ok := entries[n-1]["timestamp"].(string); ok {
			t, _ = time.Parse(time.RFC3339Nano, ts)
		}
	}
	return t
}

// strictAssistant fills what a strict reader wants of an assistant message.
func strictAssistant(m map[string]any) {
	for _, k := range []string{"api", "provider", "model"} {
		if s, _ := m[k].(string); s == "" {
			m[k] = "unknown"
		}
	}
	u, _ := m["usage"].(map[string]any)
	if u == nil {
		u = map[string]any{}
		m["usage"] = u
	}
	for _, k := range []string{"input", "output", "cacheRead", "cacheWrite", "totalTokens"} {
		if _, ok := u[k].(float64); !ok {
			u[k] = 0
		}
	}
	c, _ := u["cost"].(map[string]any)
	if c == nil {
		c = map[string]any{}
		u["cost"] = c
	}
	for _, k := range []string{"input", "output", "cacheRead", "cacheWrite", "total"} {
		if _, ok := c[k].(float64); !ok {
			c[k] = 0
		}
	}
	if _, ok := m["timestamp"].(float64); !ok {
		m["timestamp"] = 0
	}
}

// importPiBlobs puts every blobs/<sha256> file of a pi root into the store,
// each checked against its name.
func importPiBlobs(ctx context.Context, bs *cas.Store, dir string, dry bool) (int, error) {
	n, _, err := importPiBlobsRedacted(ctx, bs, dir, dry, nil)
	return n, err
}

// importPiBlobsRedacted is importPiBlobs with redact, when not nil,
// applied to each text blob (a tool output): one that changes is put
// under the ref of its redacted bytes, and the returned map takes the
// source's ref string to that one, for the sessions naming it.
func importPiBlobsRedacted(ctx context.Context, bs *cas.Store, dir string, dry bool, redact func([]byte) ([]byte, error)) (int, map[string]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("import blobs: %w", err)
	}
	n := 0
	rewrites := map[string]string{}
	var errs []error
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		ref, err := cas.ParseRef("blob:sha256:" + e.Name())
		if err != nil {
			continue // not a blob
		}
		path := filepath.Join(dir, e.Name())
		if err := regularFile(path); err != nil {
			errs = append(errs, fmt.Errorf("import blob: %w", err))
			continue
		}
		if redact != nil {
			put, err := putRedactedBlob(ctx, bs, path, ref, dry, redact, rewrites)
			if err != nil {
				errs = append(errs, err)
			}
			if put {
				n++
			}
			continue
		}
		if ok, err := bs.Has(ctx, ref); err != nil {
			return n, rewrites, err
		} else if ok {
			continue
		}
		n++
		if dry {
			continue
		}
		r, err := os.Open(path)
		if err != nil {
			return n, rewrites, fmt.Errorf("import blobs: %w", err)
		}
		err = bs.PutRef(ctx, ref, r)
		r.Close()
		if err != nil {
			// A blob whose bytes do not match its name is left out; the others go in.
			n--
			errs = append(errs, fmt.Errorf("import blob %s: %w", path, err))
		}
	}
	return n, rewrites, errors.Join(errs...)
}

// putRedactedBlob puts the blob file at path, named ref, redacted when it
// is text, and notes a changed ref in rewrites. It says whether it put
// (or, dry, would put) a blob the store lacked.
func putRedactedBlob(ctx context.Context, bs *cas.Store, path string, ref cas.Ref, dry bool, redact func([]byte) ([]byte, error), rewrites map[string]string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("import blobs: %w", err)
	}
	got, err := cas.Sum(ref.Algorithm(), data)
	if err != nil {
		return false, fmt.Errorf("import blob %s: %w", path, err)
	}
	if got != ref {
		return false, fmt.Errorf("import blob %s: %w: content hashes to %v", path, cas.ErrCorrupt, got)
	}
	if utf8.Valid(data) {
		if data, err = redact(data); err != nil {
			return false, fmt.Errorf("import blob %s: %w", path, err)
		}
	}
	to, err := cas.Sum(ref.Algorithm(), data)
	if err != nil {
		return false, err
	}
	if to != ref {
		rewrites[ref.String()] = to.String()
	}
	if ok, err := bs.Has(ctx, to); err != nil || ok {
		return false, err
	}
	if dry {
		return true, nil
	}
	if _, err := bs.Put(ctx, data); err != nil {
		return false, fmt.Errorf("import blob %s: %w", path, err)
	}
	return true, nil
}

// missingBlobs counts the image refs of entries whose blob the store
// lacks.
func missingBlobs(ctx context.Context, bs *cas.Store, entries []map[string]any) int {
	n := 0
	for _, e := range entries {
		m, _ := e["message"].(map[string]any)
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			blk, _ := b.(map[string]any)
			data, _ := blk["data"].(string)
			if ref, err := cas.ParseRef(data); err == nil {
				if ok, err := bs.Has(ctx, ref); err == nil && !ok {
					n++
				}
			}
		}
	}
	return n
}

// externalize moves what the session store keeps as blobs out of a message
// entry, in the same stored form (docs/session-format.md): images of
// tree.BlobThreshold base64 characters or more, and tool-result text over
// tree.DefaultToolResultThreshold bytes (a stub naming the blob, and
// textRef), so each is kept once however many sessions carry it.
func externalize(ctx context.Context, bs *cas.Store, e map[string]any) error {
	m, _ := e["message"].(map[string]any)
	blocks, _ := m["content"].([]any)
	for _, b := range blocks {
		blk, _ := b.(map[string]any)
		switch text, _ := blk["text"].(string); {
		case blk["type"] == "image":
			data, _ := blk["data"].(string)
			if len(data) < tree.BlobThreshold || strings.HasPrefix(data, "blob:") {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(data)
			if err != nil || base64.StdEncoding.EncodeToString(raw) != data {
				continue // not canonical base64: it would not come back as it was, so it stays inline
			}
			ref, err := bs.Put(ctx, raw)
			if err != nil {
				return err
			}
			blk["data"] = ref.String()
		case blk["type"] == "text" && m["role"] == "toolResult" && len(text) > tree.DefaultToolResultThreshold && blk["textRef"] == nil:
			ref, err := bs.Put(ctx, []byte(text))
			if err != nil {
				return err
			}
			blk["text"] = fmt.Sprintf("[trove: tool output of %d bytes stored as %s]", len(text), ref)
			blk["textRef"] = ref.String()
		}
	}
	return nil
}
