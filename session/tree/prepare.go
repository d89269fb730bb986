package tree

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/trovekit/trove/internal/jsonscan"
)

// Prepared is a message checked and completed for appending
// (PrepareMessage): what a writer frames into an entry line without
// looking at the message again. A Handle prepares in the caller's
// goroutine, so the background writer only frames and writes.
type Prepared struct {
	msg   []byte // compact; with extra, completed (the writing contract)
	extra []byte // members to add at the end of msg, each after a comma
	role  string
	usage Usage
	keys  keysSeen // keysNone or keysSome: the preparer's keys it holds

	// own: msg is buf[head:head+len(msg)], a buffer of the message's own
	// (PrepareMessageCopy) with room to frame its line in place.
	own  bool
	buf  []byte
	head int
}

// frameHead and frameTail are the room PrepareMessageCopy leaves before
// a message, for the start of its entry line (a prefix of 99 bytes with
// trove's ids), and after it, for the members the writing contract adds.
const (
	frameHead = 112
	frameTail = 96
)

// PrepareMessageCopy is PrepareMessage on a copy of msg, which the caller
// may then reuse at once; the copy has room for the message's entry line,
// which is framed in it.
func PrepareMessageCopy(msg json.RawMessage) (*Prepared, error) {
	buf := make([]byte, frameHead, frameHead+len(msg)+frameTail)
	buf = append(buf, msg...)
	p, err := PrepareMessage(buf[frameHead:])
	if err != nil {
		return nil, err
	}
	if len(p.msg) == len(msg) && len(p.msg) > 0 && &p.msg[0] == &buf[frameHead] {
		p.own, p.buf, p.head = true, buf[:cap(buf)], frameHead
	}
	return p, nil
}

// EntryType makes a Prepared message an entry to Append.
func (*Prepared) EntryType() string { return TypeMessage }

// Role is the message's role.
func (p *Prepared) Role() string { return p.role }

// Message is the message as it will be written.
func (p *Prepared) Message() json.RawMessage {
	if p.extra == nil {
		return p.msg
	}
	return p.appendMessage(nil)
}

func (p *Prepared) appendMessage(b []byte) []byte {
	if p.extra == nil {
		return append(b, p.msg...)
	}
	b = append(b, p.msg[:len(p.msg)-1]...) // compact: the last byte is '}'
	return append(p.appendExtra(b), '}')
}

// appendExtra appends the members to add, after the message's own.
func (p *Prepared) appendExtra(b []byte) []byte {
	if len(p.msg) == 2 && len(p.extra) > 0 {
		return append(b, p.extra[1:]...) // {} takes no comma
	}
	return append(b, p.extra...)
}

// Size is the length of the message as it will be written.
func (p *Prepared) Size() int { return len(p.msg) + len(p.extra) }

// Usage is what the message adds to a session's totals.
func (p *Prepared) Usage() Usage { return p.usage }

// Usage is what a message adds to a session's totals, read as session
// metadata counts it: tokens from usage (total as given in totalTokens or
// total_tokens, else input+output+cacheRead+cacheWrite), cost from
// usage.cost.total, and an assistant's model.
type Usage struct {
	Model                string // "" for other roles or none given
	Input, Output, Total int64
	Cost                 float64
}

// PrepareMessage checks msg (an AgentMessage JSON object with a role) and
// completes it as the writing contract asks, in one pass over its bytes: a
// message that is not a JSON object with a role is ErrInvalid.
func PrepareMessage(msg json.RawMessage) (*Prepared, error) {
	// The keys of what is stored apart or dropped (image data, transient
	// fields): a message without any is written as it is, unread again.
	valid, compact, ms, special := jsonscan.ScanObjectKeys(msg, make(jsonscan.Members, 0, 10), `"data"`, `"partialJson"`, `"jsonlEvents"`)
	if !valid {
		return nil, fmt.Errorf("message: not valid JSON: %w", ErrInvalid)
	}
	if ms == nil {
		return nil, fmt.Errorf("message: not a JSON object: %w", ErrInvalid)
	}
	if !compact {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err != nil {
			return nil, fmt.Errorf("message: %w: %w", ErrInvalid, err)
		}
		msg = b.Bytes()
		ms, _ = jsonscan.SplitObject(msg)
	}
	var f topFields
	if special {
		// An escaped key may be any of them: looked up as JSON.parse would.
		f = topFields{ms.Get("role"), ms.Get("api"), ms.Get("provider"), ms.Get("model"), ms.Get("usage")}
	} else {
		f.pick(ms)
	}
	role, ok := commonString(f.role)
	if !ok || role == "" {
		return nil, fmt.Errorf("message: no role: %w", ErrInvalid)
	}
	p := &Prepared{msg: msg, role: role, keys: keysNone}
	if special {
		p.keys = keysSome
	}
	var u Usage
	complete := false
	if role == "assistant" {
		u, complete = completeUsage(f.usage)
		edits, err := assistantEditsOf(f.api, f.provider, f.model, f.usage, complete)
		if err != nil {
			return nil, err
		}
		if len(edits) > 0 {
			p.msg, p.extra = applyEdits(msg, ms, edits)
			// The totals are read from what is written.
			for _, e := range edits {
				switch e.Key {
				case "usage":
					f.usage = e.Val
				case "model":
					f.model = e.Val
				}
			}
		}
	}
	if !complete {
		u = usageTotals(f.usage)
	}
	p.usage = withModel(u, role, f.model)
	return p, nil
}

// completeUsage reads, in one pass, a usage object that needs nothing
// completed (every one of usageKeys, and of its cost's costKeys, there as
// a number: what numbers leaves as it is), with the totals usageTotals reads
// from it (but the model). ok is false for anything else, and for any
// escaped key, which may be any of them: numbers and usageFrom decide
// those.
func completeUsage(usage []byte) (u Usage, ok bool) {
	var buf, cbuf [10]jsonscan.Member
	var v [7][]byte // completeKeys' values
	var c [5][]byte // costKeys' values
	um, ok := jsonscan.SplitObjectInto(usage, buf[:0])
	if !ok || !pickPlain(um, completeKeys[:], v[:]) {
		return u, false
	}
	cm, ok := jsonscan.SplitObjectInto(v[6], cbuf[:0])
	if !ok || !pickPlain(cm, costKeys, c[:]) {
		return u, false
	}
	for _, n := range [...][]byte{v[0], v[1], v[2], v[3], v[4], c[0], c[1], c[2], c[3], c[4]} {
		if !isNumber(n) {
			return u, false
		}
	}
	return totals(v[0], v[1], v[2], v[3], v[4], v[5], c[4]), true
}

// completeKeys are usageKeys, then what usageFrom also reads.
var completeKeys = [7]string{"input", "output", "cacheRead", "cacheWrite", "totalTokens", "total_tokens", "cost"}

// pickPlain sets vals[i] to the value of keys[i] in ms (the last one, as
// JSON.parse keeps); false for an escaped key, which may be any of them.
func pickPlain(ms jsonscan.Members, keys []string, vals [][]byte) bool {
	for _, m := range ms {
		r := m.KeyRaw
		if bytes.IndexByte(r, '\\') >= 0 {
			return false
		}
		for i, k := range keys {
			if m.Is(k) {
				vals[i] = m.Val
				break
			}
		}
	}
	return true
}

// topFields are the members of a message PrepareMessage looks at.
type topFields struct{ role, api, provider, model, usage []byte }

// pick reads them in one pass over keys without escapes; the last of a
// duplicate key wins, as in JSON.parse.
func (f *topFields) pick(ms jsonscan.Members) {
	for _, m := range ms {
		switch string(m.KeyRaw) {
		case `"role"`:
			f.role = m.Val
		case `"api"`:
			f.api = m.Val
		case `"provider"`:
			f.provider = m.Val
		case `"model"`:
			f.model = m.Val
		case `"usage"`:
			f.usage = m.Val
		}
	}
}

// applyEdits applies edits to the compact object msg, as EditObject does:
// where they only add members, as the members to append (extra), so that
// the message is copied once, into its line.
func applyEdits(msg []byte, ms jsonscan.Members, edits []jsonscan.Edit) (full, extra []byte) {
	for _, e := range edits {
		if e.Val == nil || ms.Get(e.Key) != nil {
			return jsonscan.EditObject(ms, edits...), nil
		}
	}
	for _, e := range edits {
		extra = append(append(append(append(extra, ','), jsonscan.Quote(e.Key)...), ':'), e.Val...)
	}
	return msg, extra
}

// usageOf reads a message's totals from its members.
func usageOf(role string, ms jsonscan.Members) Usage {
	return usageFrom(role, ms.Get("model"), ms.Get("usage"))
}

// usageFrom reads a message's totals from its model and usage values.
func usageFrom(role string, model, usage []byte) Usage {
	return withModel(usageTotals(usage), role, model)
}

// usageTotals reads the totals of a usage value (zero where it is none).
func usageTotals(usage []byte) Usage {
	var buf, cbuf [8]jsonscan.Member
	um, ok := jsonscan.SplitObjectInto(usage, buf[:0])
	if !ok {
		return Usage{}
	}
	var cost []byte
	if cm, ok := jsonscan.SplitObjectInto(um.Get("cost"), cbuf[:0]); ok {
		cost = cm.Get("total")
	}
	return totals(um.Get("input"), um.Get("output"), um.Get("cacheRead"), um.Get("cacheWrite"), um.Get("totalTokens"), um.Get("total_tokens"), cost)
}

// totals makes a Usage of the raw numbers (nil where absent): the total is
// the one given, else the sum.
func totals(in, out, cacheRead, cacheWrite, total, totalSnake, cost []byte) Usage {
	u := Usage{Input: int64(number(in)), Output: int64(number(out)), Cost: number(cost)}
	u.Total = cmp.Or(int64(number(total)), int64(number(totalSnake)), u.Input+u.Output+int64(number(cacheRead))+int64(number(cacheWrite)))
	return u
}

// withModel sets u's model: an assistant message's, where it is a string.
func withModel(u Usage, role string, model []byte) Usage {
	if role == "assistant" {
		if m, ok := jsonscan.String(model); ok {
			u.Model = m
		}
	}
	return u
}

// number reads a JSON number (0 for anything else), small integers by
// hand.
func number(raw []byte) float64 {
	if len(raw) == 0 {
		return 0 // missing: no error to make
	}
	if len(raw) < 16 {
		var v int64
		i := 0
		for ; i < len(raw) && raw[i] >= '0' && raw[i] <= '9'; i++ {
			v = v*10 + int64(raw[i]-'0')
		}
		if i == len(raw) {
			return float64(v)
		}
	}
	f, _ := strconv.ParseFloat(string(raw), 64)
	return f
}

// Usage is what a message entry adds to a session's totals (zero for other
// entries).
func (e *Entry) Usage() Usage {
	if e.usage != nil {
		return *e.usage
	}
	if e.typ != TypeMessage {
		return Usage{}
	}
	ms, _ := jsonscan.SplitObject(e.Field("message"))
	return usageOf(e.role, ms)
}
