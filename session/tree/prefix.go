package tree

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trovekit/trove/internal/jsonl"
	"github.com/trovekit/trove/internal/jsonscan"
)

// Prefix is what the first bytes of a session file tell: its header, its
// creation time and the text of its first user message when they hold it.
type Prefix struct {
	Header       Header
	Created      time.Time // header timestamp (zero when it does not parse)
	FirstMessage string
}

// ScanPrefix reads a session's header and first user message from the
// first bytes of its file; complete says they are the whole file (else a
// last line without its newline was cut, not torn). A prefix without a
// header is ErrNoHeader.
func ScanPrefix(data []byte, complete bool) (Prefix, error) {
	var p Prefix
	n, found := len(data), false
	for len(data) > 0 {
		line, rest, whole := jsonl.Cut(data)
		if !whole && !complete {
			break // cut by the prefix
		}
		data = rest
		line = trimLine(line)
		if len(line) == 0 {
			continue
		}
		if !found {
			if !json.Valid(line) {
				continue
			}
			ms, _ := jsonscan.SplitObject(line)
			h, ok := parseHeader(ms)
			if !ok {
				return p, ErrNoHeader
			}
			found = true
			p.Header = h
			if ms, ok := epochMillis(jsonscan.Quote(h.Timestamp)); ok {
				p.Created = time.UnixMilli(ms).UTC()
			}
			continue
		}
		if !json.Valid(line) {
			continue
		}
		if e := newEntry(line, 0); e.typ == TypeMessage && e.role == "user" {
			p.FirstMessage = MessageText(e.Field("message"))
			break
		}
	}
	if !found {
		return p, fmt.Errorf("no header in the first %d bytes: %w", n, ErrNoHeader)
	}
	return p, nil
}

// MessageText is the text of a message: its string content, or its text
// blocks joined by spaces.
func MessageText(msg []byte) string {
	ms, _ := jsonscan.SplitObject(msg)
	content := ms.Get("content")
	if s, ok := jsonscan.String(content); ok {
		return s
	}
	blocks, _ := jsonscan.SplitArray(content)
	var parts []string
	for _, b := range blocks {
		bm, _ := jsonscan.SplitObject(b)
		if t, _ := bm.Str("type"); t == "text" {
			if s, ok := bm.Str("text"); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, " ")
}
