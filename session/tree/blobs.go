package tree

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/internal/jsonscan"
)

// Size limits of pi session v3 "Data Size Controls and Blob Externalization".
const (
	// MaxPersistChars is the longest string written, in UTF-16 code units
	// (JavaScript characters); longer ones are cut and end with
	// TruncationNotice.
	MaxPersistChars = 500_000
	// TruncationNotice ends every truncated string.
	TruncationNotice = "\n\n[Session persistence truncated large content]"
	// BlobThreshold is the base64 length from which an image block is
	// written to the blob store.
	BlobThreshold = 1024
	// DefaultToolResultThreshold is the tool-result text size, in bytes,
	// above which trove writes the text to the blob store.
	DefaultToolResultThreshold = 64 << 10
)

// BlobPrefix starts every blob ref pi session v3 writes; refs of a BLAKE3 cas
// store start with blobPrefixBLAKE3 and are resolved too.
const (
	BlobPrefix       = "blob:sha256:"
	blobPrefixBLAKE3 = "blob:blake3:"
)

// textRefKey marks a text block whose text trove moved to the blob store;
// the block's text then holds a readable stub naming the ref, so readers
// that do not know the key still see what happened.
const textRefKey = "textRef"

func isBlobRef(s string) bool {
	return strings.HasPrefix(s, BlobPrefix) || strings.HasPrefix(s, blobPrefixBLAKE3)
}

// mayHoldRef is a cheap test that lets entries without refs skip the walk.
func mayHoldRef(b []byte) bool {
	// One pass for both prefixes: they share "blob:".
	for {
		i := bytes.Index(b, []byte("blob:"))
		if i < 0 {
			return false
		}
		if bytes.HasPrefix(b[i:], []byte(BlobPrefix)) || bytes.HasPrefix(b[i:], []byte(blobPrefixBLAKE3)) {
			return true
		}
		b = b[i+5:]
	}
}

// transient fields are never persisted (pi session v3).
func isTransient(key string) bool { return key == "partialJson" || key == "jsonlEvents" }

// Keys whose strings are signatures: cut, they would fail verification on
// replay, so they are written whole.
func isSignatureKey(key string) bool {
	return key == "thinkingSignature" || key == "thoughtSignature" || key == "textSignature"
}

// preparer turns an entry as held in memory into the form written to disk:
// transient fields dropped, long strings cut, big images and tool outputs
// moved to the blob store. Unchanged values keep their bytes.
type preparer struct {
	ctx     context.Context
	blobs   cas.Blobs
	toolMax int
	err     error
}

// mayNeedPrepare is a cheap test that lets most entries skip the walk.
func mayNeedPrepare(b []byte, toolMax int) bool {
	if len(b) >= BlobThreshold && bytes.Contains(b, []byte(`"image"`)) {
		return true
	}
	if tooLong(b, toolMax) {
		return true
	}
	return bytes.Contains(b, []byte("partialJson")) || bytes.Contains(b, []byte("jsonlEvents"))
}

// tooLong reports an entry long enough to hold a string to cut or a tool
// output to store apart.
func tooLong(b []byte, toolMax int) bool {
	return len(b) > MaxPersistChars || (toolMax > 0 && len(b) > toolMax)
}

// entry returns b as it is stored; walk: b is known to hold a key the
// preparer acts on (else mayNeedPrepare decides).
func (p *preparer) entry(b []byte, walk bool) ([]byte, error) {
	if !walk && !mayNeedPrepare(b, p.toolMax) {
		return b, nil
	}
	out, _ := p.value(b, "", false, 0)
	return out, p.err
}

// maxDepth bounds the walks; deeper values are left as they are.
const maxDepth = 10000

func (p *preparer) value(v []byte, key string, toolResult bool, depth int) ([]byte, bool) {
	if p.err != nil || len(v) == 0 || depth > maxDepth {
		return v, false
	}
	switch v[0] {
	case '"':
		return p.str(v, key)
	case '[':
		return p.array(v, key, toolResult, depth)
	case '{':
		return p.object(v, depth)
	}
	return v, false
}

func (p *preparer) str(v []byte, key string) ([]byte, bool) {
	// A JSON string is never shorter in bytes than in UTF-16 units.
	if len(v)-2 <= MaxPersistChars || isSignatureKey(key) {
		return v, false
	}
	s, ok := jsonscan.String(v)
	if !ok || jsonscan.UTF16Len(s) <= MaxPersistChars {
		return v, false
	}
	cut := jsonscan.TruncateUTF16(s, MaxPersistChars-jsonscan.UTF16Len(TruncationNotice)) + TruncationNotice
	return jsonscan.Quote(cut), true
}

func (p *preparer) array(v []byte, key string, toolResult bool, depth int) ([]byte, bool) {
	elems, ok := jsonscan.SplitArray(v)
	if !ok {
		return v, false
	}
	changed := false
	out := make([][]byte, len(elems))
	for i, el := range elems {
		nv, ch := el, false
		if key == "content" {
			nv, ch = p.block(el, toolResult)
		}
		if !ch {
			nv, ch = p.value(el, key, false, depth+1)
		}
		out[i] = nv
		changed = changed || ch
	}
	if !changed {
		return v, false
	}
	return joinArray(out), true
}

// block externalizes one content block when it is a big image, or the big
// text of a tool result.
func (p *preparer) block(el []byte, toolResult bool) ([]byte, bool) {
	if len(el) == 0 || el[0] != '{' || p.blobs == nil {
		return el, false
	}
	ms, ok := jsonscan.SplitObject(el)
	if !ok {
		return el, false
	}
	typ, _ := ms.Str("type")
	switch {
	case typ == "image":
		data, ok := ms.Str("data")
		if !ok || len(data) < BlobThreshold || isBlobRef(data) {
			return el, false
		}
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil || base64.StdEncoding.EncodeToString(raw) != data {
			// Not canonical base64: it would not come back byte for
			// byte, so it stays inline.
			return el, false
		}
		ref, err := putRef(p.ctx, p.blobs, raw)
		if err != nil {
			p.err = fmt.Errorf("store image: %w", err)
			return el, false
		}
		return jsonscan.EditObject(ms, jsonscan.Edit{Key: "data", Val: jsonscan.Quote(ref)}), true
	case typ == "text" && toolResult && p.toolMax > 0:
		if ms.Get(textRefKey) != nil {
			return el, false
		}
		text, ok := ms.Str("text")
		if !ok || len(text) <= p.toolMax {
			return el, false
		}
		ref, err := putRef(p.ctx, p.blobs, []byte(text))
		if err != nil {
			p.err = fmt.Errorf("store tool output: %w", err)
			return el, false
		}
		stub := fmt.Sprintf("[trove: tool output of %d bytes stored as %s]", len(text), ref)
		return jsonscan.EditObject(ms, jsonscan.Edit{Key: "text", Val: jsonscan.Quote(stub)}, jsonscan.Edit{Key: textRefKey, Val: jsonscan.Quote(ref)}), true
	}
	return el, false
}

func (p *preparer) object(v []byte, depth int) ([]byte, bool) {
	ms, ok := jsonscan.SplitObject(v)
	if !ok {
		return v, false
	}
	if signedBlock(ms) {
		return v, false
	}
	role, _ := ms.Str("role")
	toolResult := role == "toolResult"
	changed := false
	var edits []jsonscan.Edit
	for _, m := range ms {
		if isTransient(m.Name()) {
			edits = append(edits, jsonscan.Edit{Key: m.Name(), Val: nil})
			changed = true
			continue
		}
		nv, ch := p.value(m.Val, m.Name(), toolResult && m.Name() == "content", depth+1)
		if ch {
			edits = append(edits, jsonscan.Edit{Key: m.Name(), Val: nv})
			changed = true
		}
	}
	if !changed {
		return v, false
	}
	// A file mention's lineCount follows its (now cut) content.
	if lc := ms.Get("lineCount"); isNumber(lc) {
		for _, e := range edits {
			if e.Key == "content" && e.Val != nil {
				if s, ok := jsonscan.String(e.Val); ok {
					edits = append(edits, jsonscan.Edit{Key: "lineCount", Val: []byte(strconv.Itoa(strings.Count(s, "\n") + 1))})
				}
			}
		}
	}
	return jsonscan.EditObject(ms, edits...), true
}

// signedBlock reports a content block bound to its exact bytes by a
// signature or encryption: it is written whole.
func signedBlock(ms jsonscan.Members) bool {
	typ, _ := ms.Str("type")
	nonEmpty := func(k string) bool { s, ok := ms.Str(k); return ok && s != "" }
	switch typ {
	case "thinking":
		return nonEmpty("thinkingSignature")
	case "text":
		return nonEmpty("textSignature")
	case "toolCall":
		return nonEmpty("thoughtSignature")
	case "redactedThinking":
		return nonEmpty("data")
	}
	return false
}

func joinArray(elems [][]byte) []byte {
	n := 2
	for _, e := range elems {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}

// putRef stores data and returns its ref as session files write it.
func putRef(ctx context.Context, b cas.Blobs, data []byte) (string, error) {
	ref, err := b.Put(ctx, data)
	if err != nil {
		return "", err
	}
	return ref.String(), nil
}

// resolver turns blob refs of a loaded entry back into their content.
// Failures become readable placeholders and are reported; the stored form
// keeps the ref, so nothing is lost if the blob comes back.
type resolver struct {
	ctx    context.Context
	blobs  cas.Blobs
	cache  map[string][]byte
	report func(ref string, err error)
}

func (r *resolver) get(ref string) ([]byte, error) {
	if data, ok := r.cache[ref]; ok {
		return data, nil
	}
	if r.blobs == nil {
		return nil, fmt.Errorf("%s: no blob store configured", ref)
	}
	parsed, err := cas.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	data, err := r.blobs.Get(r.ctx, parsed)
	if err != nil {
		return nil, err
	}
	if r.cache == nil {
		r.cache = make(map[string][]byte)
	}
	r.cache[ref] = data
	return data, nil
}

func (r *resolver) value(v []byte, key string, depth int) ([]byte, bool) {
	if len(v) == 0 || depth > maxDepth {
		return v, false
	}
	switch v[0] {
	case '[':
		elems, ok := jsonscan.SplitArray(v)
		if !ok {
			return v, false
		}
		changed := false
		for i, el := range elems {
			nv, ch := el, false
			if key == "content" {
				nv, ch = r.block(el)
			}
			if !ch {
				nv, ch = r.value(el, key, depth+1)
			}
			elems[i] = nv
			changed = changed || ch
		}
		if !changed {
			return v, false
		}
		return joinArray(elems), true
	case '{':
		ms, ok := jsonscan.SplitObject(v)
		if !ok {
			return v, false
		}
		var edits []jsonscan.Edit
		for _, m := range ms {
			if nv, ch := r.value(m.Val, m.Name(), depth+1); ch {
				edits = append(edits, jsonscan.Edit{Key: m.Name(), Val: nv})
			}
		}
		if len(edits) == 0 {
			return v, false
		}
		return jsonscan.EditObject(ms, edits...), true
	}
	return v, false
}

func (r *resolver) block(el []byte) ([]byte, bool) {
	if len(el) == 0 || el[0] != '{' || !mayHoldRef(el) {
		return el, false
	}
	ms, ok := jsonscan.SplitObject(el)
	if !ok {
		return el, false
	}
	typ, _ := ms.Str("type")
	switch typ {
	case "image":
		ref, ok := ms.Str("data")
		if !ok || !isBlobRef(ref) {
			return el, false
		}
		data, err := r.get(ref)
		if err != nil {
			r.report(ref, err)
			mime, _ := ms.Str("mimeType")
			text := fmt.Sprintf("[trove: image %s (%s) unavailable: %v]", ref, mime, err)
			return []byte(`{"type":"text","text":` + string(jsonscan.Quote(text)) + `}`), true
		}
		return jsonscan.EditObject(ms, jsonscan.Edit{Key: "data", Val: jsonscan.Quote(base64.StdEncoding.EncodeToString(data))}), true
	case "text":
		ref, ok := ms.Str(textRefKey)
		if !ok || !isBlobRef(ref) {
			return el, false
		}
		data, err := r.get(ref)
		text := string(data)
		if err != nil {
			r.report(ref, err)
			text = fmt.Sprintf("[trove: tool output %s unavailable: %v]", ref, err)
		}
		return jsonscan.EditObject(ms, jsonscan.Edit{Key: "text", Val: jsonscan.Quote(text)}, jsonscan.Edit{Key: textRefKey, Val: nil}), true
	}
	return el, false
}
