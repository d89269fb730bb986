package redact

import (
	"bytes"

	"github.com/trovekit/trove/internal/jsonscan"
)

// structural are the keys whose values hold ids, types and times, never
// text: they are left as they are, so a redacted session keeps its tree.
var structural = map[string]bool{
	"id": true, "parentId": true, "parentSession": true, "type": true, "role": true, "timestamp": true,
	"toolCallId": true, "version": true, "run_id": true, "session_id": true, "parent_id": true, "seq": true,
}

// JSON redacts the string values of the JSON text b, leaving keys, ids,
// numbers, layout and every other byte as they are, so the result parses
// as b did and keeps its tree. edit, when not nil, is applied to each
// value first, ids too (to swap blob refs, say), and may fail. Findings' offsets are
// those of the string literal in b that holds them. Text that is not JSON
// is redacted as plain text. The result is b itself when nothing changed.
func (d *Detector) JSON(b []byte, edit func(string) (string, error)) ([]byte, []Finding, error) {
	if valid, _ := jsonscan.Scan(b); !valid {
		out, fs := d.Redact(string(b))
		if fs == nil {
			return b, nil, nil
		}
		return []byte(out), fs, nil
	}
	var (
		out     []byte // nil until something changes
		last    int    // b[last:] not yet copied to out
		found   []Finding
		key     string
		parents []string
	)
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			parents = append(parents, key)
			key = ""
		case '[':
			parents = append(parents, key)
		case '}', ']':
			if n := len(parents); n > 0 {
				key, parents = parents[n-1], parents[:n-1]
			}
		case '"':
			j := jsonscan.SkipString(b, i)
			if k := jsonscan.SkipWS(b, j); k < len(b) && b[k] == ':' {
				key = jsonscan.UnquoteKey(b[i:j])
				i = j - 1
				continue
			}
			s, ok := jsonscan.String(b[i:j])
			if !ok || edit == nil && structural[key] {
				i = j - 1
				continue
			}
			red := s
			if edit != nil {
				e, err := edit(s)
				if err != nil {
					return nil, nil, err
				}
				red = e
			}
			var fs []Finding
			if !structural[key] {
				red, fs = d.Redact(red)
			}
			for _, f := range fs {
				f.Start, f.End = i, j
				found = append(found, f)
			}
			if red != s {
				out = append(append(out, b[last:i]...), jsonscan.Quote(red)...)
				last = j
			}
			i = j - 1
		}
	}
	if out == nil {
		return b, found, nil
	}
	return append(out, b[last:]...), found, nil
}

// JSONLines is JSON over each line of data (JSONL), line ends kept: a
// line that is not JSON (torn, damaged) is redacted as plain text. The
// result is data itself when nothing changed.
func (d *Detector) JSONLines(data []byte, edit func(string) (string, error)) ([]byte, []Finding, error) {
	var (
		out     []byte
		changed bool // out holds data up to start, redacted
		found   []Finding
	)
	for start := 0; start < len(data); {
		end := bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += start
		}
		line := data[start:end]
		red, fs, err := d.JSON(line, edit)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range fs {
			f.Start, f.End = f.Start+start, f.End+start
			found = append(found, f)
		}
		if !changed && !bytes.Equal(red, line) {
			out, changed = append(out, data[:start]...), true
		}
		if changed {
			out = append(out, red...)
			if end < len(data) {
				out = append(out, '\n')
			}
		}
		start = end + 1
	}
	if !changed {
		return data, found, nil
	}
	return out, found, nil
}
