package tree

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/trovekit/trove/internal/jsonscan"
)

// The writing contract: trove is lenient in what it reads and exact in
// what it writes. Every entry it appends opens in a strict pi session v3 reader
// with the meaning it had for trove; Check tells whether a file keeps
// these rules.

// usageKeys and costKeys are the numeric members an assistant message's
// usage and usage.cost carry in pi session v3 (the reference reads them all).
var (
	usageKeys = []string{"input", "output", "cacheRead", "cacheWrite", "totalTokens"}
	costKeys  = []string{"input", "output", "cacheRead", "cacheWrite", "total"}
)

// Unknown is the value written for an assistant message's api, provider
// or model when the caller gave none.
const UnknownModel = "unknown"

// normalizeAssistant returns an assistant message as pi session v3 readers need
// it (assistantEdits applied), or nil when it needs no change.
func normalizeAssistant(ms jsonscan.Members) ([]byte, error) {
	edits, err := assistantEdits(ms)
	if err != nil || len(edits) == 0 {
		return nil, err
	}
	return jsonscan.EditObject(ms, edits...), nil
}

// assistantEdits returns what an assistant message needs for pi session v3
// readers: usage with every numeric member and cost (zeros where unknown,
// totals summed), and api, provider and model as given or UnknownModel.
// Values the caller gave are kept byte for byte; a value of the wrong type
// is refused.
func assistantEdits(ms jsonscan.Members) ([]jsonscan.Edit, error) {
	return assistantEditsOf(ms.Get("api"), ms.Get("provider"), ms.Get("model"), ms.Get("usage"), false)
}

// assistantEditsOf is assistantEdits given the raw values of the members
// it looks at (nil where absent); usageComplete says usage is known to
// need nothing (completeUsage), so it is not read again.
func assistantEditsOf(api, provider, model, usage []byte, usageComplete bool) ([]jsonscan.Edit, error) {
	var edits []jsonscan.Edit
	for _, m := range [...]struct {
		k string
		v []byte
	}{{"api", api}, {"provider", provider}, {"model", model}} {
		k, v := m.k, m.v
		switch {
		case v == nil || jsonscan.IsNull(v):
			edits = append(edits, jsonscan.Edit{Key: k, Val: jsonscan.Quote(UnknownModel)})
		case v[0] != '"':
			return nil, fmt.Errorf("assistant message %s is not a string: %w", k, ErrInvalid)
		}
	}
	if usageComplete {
		return edits, nil
	}
	fixed, err := numbers(usage, "usage", usageKeys, "totalTokens", true)
	if err != nil {
		return nil, err
	}
	if fixed != nil {
		edits = append(edits, jsonscan.Edit{Key: "usage", Val: fixed})
	}
	return edits, nil
}

// numbers completes an object of numeric members: missing members are 0,
// and total (when missing) is the sum of the others. It returns nil when v
// needs no change. withCost completes its "cost" member too (usage).
func numbers(v []byte, what string, keys []string, total string, withCost bool) ([]byte, error) {
	if v == nil || jsonscan.IsNull(v) {
		v = []byte("{}")
	}
	var buf [8]jsonscan.Member
	ms, ok := jsonscan.SplitObjectInto(v, buf[:0])
	if !ok {
		return nil, fmt.Errorf("assistant message %s is not an object: %w", what, ErrInvalid)
	}
	var edits []jsonscan.Edit
	t := ms.Get(total)
	sum, needSum := 0.0, t == nil || jsonscan.IsNull(t)
	for _, k := range keys {
		n := ms.Get(k)
		if n == nil || jsonscan.IsNull(n) {
			if k != total {
				edits = append(edits, jsonscan.Edit{Key: k, Val: []byte("0")})
			}
			continue
		}
		if !isNumber(n) {
			return nil, fmt.Errorf("assistant message %s.%s is not a number: %w", what, k, ErrInvalid)
		}
		if k != total && needSum {
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return nil, fmt.Errorf("assistant message %s.%s is not a number: %w", what, k, ErrInvalid)
			}
			sum += f
		}
	}
	if needSum {
		edits = append(edits, jsonscan.Edit{Key: total, Val: []byte(strconv.FormatFloat(sum, 'g', -1, 64))})
	}
	if withCost {
		cost, err := numbers(ms.Get("cost"), "usage.cost", costKeys, "total", false)
		if err != nil {
			return nil, err
		}
		if cost != nil {
			edits = append(edits, jsonscan.Edit{Key: "cost", Val: cost})
		}
	}
	if len(edits) == 0 && !jsonscan.IsNull(v) && string(v) != "{}" {
		return nil, nil
	}
	return jsonscan.EditObject(ms, edits...), nil
}

// Violation is the first thing Check found that a strict pi session v3 reader
// would refuse or read otherwise.
type Violation struct {
	Line int // 1-based
	Msg  string
}

func (v *Violation) Error() string { return fmt.Sprintf("line %d: %s", v.Line, v.Msg) }

// Unwrap makes a violation an ErrInvalid.
func (v *Violation) Unwrap() error { return ErrInvalid }

// isoMillis reports whether s is laid out as 2006-01-02T15:04:05.000Z,
// digits where the layout has digits (a check by hand: a package-level
// regexp is compiled at every process start).
func isoMillis(s string) bool {
	const layout = "0000-00-00T00:00:00.000Z"
	if len(s) != len(layout) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if layout[i] == '0' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != layout[i] {
			return false
		}
	}
	return true
}

// Check returns the first violation of the writing contract in a session
// file, or nil: the header first and valid (version 3); every line a JSON
// object ending in a newline; entry ids unique; every parentId,
// firstKeptEntryId, targetId and fromId naming an entry of the file
// (fromId may be "root"); timestamps ISO 8601 with milliseconds; assistant
// messages with usage (every numeric member, and cost) and api, provider
// and model.
func Check(data []byte) error {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return &Violation{Line: bytes.Count(data, []byte("\n")) + 1, Msg: "torn last line (no newline at the end)"}
	}
	type ref struct {
		line      int
		key, id   string
		allowRoot bool
	}
	ids := map[string]int{}
	var refs []ref
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		ms, ok := jsonscan.SplitObject(b)
		if !ok || !json.Valid(b) {
			return &Violation{line, "not a JSON object"}
		}
		typ, _ := ms.Str("type")
		if line == 1 {
			h, ok := parseHeader(ms)
			switch {
			case !ok:
				return &Violation{line, "the first line is not a session header"}
			case h.Version != CurrentVersion:
				return &Violation{line, fmt.Sprintf("header version %g, want %d", h.Version, CurrentVersion)}
			case !isoMillis(h.Timestamp):
				return &Violation{line, fmt.Sprintf("header timestamp %q is not ISO 8601 with milliseconds", h.Timestamp)}
			}
			if _, ok := ms.Str("cwd"); !ok {
				return &Violation{line, "header without cwd"}
			}
			continue
		}
		if typ == "" || typ == TypeSession {
			return &Violation{line, fmt.Sprintf("entry type %q", typ)}
		}
		id, ok := ms.Str("id")
		if !ok || id == "" {
			return &Violation{line, "entry without an id"}
		}
		if first, dup := ids[id]; dup {
			return &Violation{line, fmt.Sprintf("id %q also on line %d", id, first)}
		}
		ids[id] = line
		if p := ms.Get("parentId"); p == nil {
			return &Violation{line, "entry without parentId"}
		} else if !jsonscan.IsNull(p) {
			pid, ok := jsonscan.String(p)
			if !ok {
				return &Violation{line, "parentId is not a string or null"}
			}
			refs = append(refs, ref{line, "parentId", pid, false})
		}
		ts, _ := ms.Str("timestamp")
		if !isoMillis(ts) {
			return &Violation{line, fmt.Sprintf("timestamp %q is not ISO 8601 with milliseconds", ts)}
		}
		for key, root := range map[string]bool{"firstKeptEntryId": false, "targetId": false, "fromId": true} {
			want := map[string]string{"firstKeptEntryId": TypeCompaction, "targetId": TypeLabel, "fromId": TypeBranchSummary}[key]
			if typ != want {
				continue
			}
			v, ok := ms.Str(key)
			if !ok {
				return &Violation{line, fmt.Sprintf("%s entry without %s", typ, key)}
			}
			refs = append(refs, ref{line, key, v, root})
		}
		if typ == TypeMessage {
			msg, ok := jsonscan.SplitObject(ms.Get("message"))
			role, _ := msg.Str("role")
			if !ok || role == "" {
				return &Violation{line, "message without a role"}
			}
			if role == "assistant" {
				if fixed, err := normalizeAssistant(msg); err != nil {
					return &Violation{line, err.Error()}
				} else if fixed != nil {
					return &Violation{line, "assistant message without api, provider, model, or every usage and cost member"}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return &Violation{line + 1, err.Error()}
	}
	if line == 0 {
		return &Violation{1, "empty file"}
	}
	for _, r := range refs {
		if _, ok := ids[r.id]; !ok && !(r.allowRoot && r.id == "root") {
			return &Violation{r.line, fmt.Sprintf("%s %q names no entry of the file", r.key, r.id)}
		}
	}
	return nil
}
