package manifest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/trovekit/trove/internal/jsonscan"
)

// The manifest is read on every rewind and diff and written on every
// snapshot; for a tree of thousands of files reflection-based encoding/json
// costs tens of milliseconds each way, more than the rest of an incremental
// snapshot. This hand-written codec produces and accepts the same JSON
// (encoding/json reads what it writes and vice versa; tests check both).

// MarshalJSON encodes the manifest.
func (m *Manifest) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(make([]byte, 0, 256+len(m.Files)*200), true), nil
}

// AppendJSON appends the manifest's JSON to b; without files (what a version 2
// manifest stores: its entries are in its trees) the file list is left out.
func (m *Manifest) AppendJSON(b []byte, files bool) []byte {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(m.Version), 10)
	b = appendField(b, "id", m.ID)
	b = appendField(b, "kind", m.Kind)
	b = append(b, `,"createdAt":"`...)
	b = m.CreatedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if m.Session != "" {
		b = appendField(b, "session", m.Session)
	}
	if m.Message != "" {
		b = appendField(b, "message", m.Message)
	}
	if m.Note != "" {
		b = appendField(b, "note", m.Note)
	}
	if m.Root != "" {
		b = appendField(b, "root", m.Root)
	}
	if len(m.DefaultIgnore) > 0 {
		b = appendStrings(b, "defaultIgnore", m.DefaultIgnore)
	}
	if len(m.Ignore) > 0 {
		b = appendStrings(b, "ignore", m.Ignore)
	}
	if m.MaxFileSize != 0 {
		b = append(b, `,"maxFileSize":`...)
		b = strconv.AppendInt(b, m.MaxFileSize, 10)
	}
	if m.Tree != "" {
		b = appendField(b, "tree", m.Tree)
	}
	if m.Entries != 0 {
		b = append(b, `,"entries":`...)
		b = strconv.AppendInt(b, int64(m.Entries), 10)
	}
	if files {
		b = append(b, `,"files":[`...)
		for i := range m.Files {
			if i > 0 {
				b = append(b, ',')
			}
			b = m.Files[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	if len(m.Skipped) > 0 {
		b = append(b, `,"skipped":[`...)
		for i, s := range m.Skipped {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b = appendString(b, s.Path)
			if s.Size != 0 {
				b = append(b, `,"size":`...)
				b = strconv.AppendInt(b, s.Size, 10)
			}
			b = appendField(b, "reason", s.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (e *Entry) appendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = appendString(b, e.Path)
	if e.Exists {
		b = append(b, `,"exists":true`...)
	} else {
		b = append(b, `,"exists":false`...)
	}
	if e.Type != "" {
		b = appendField(b, "type", e.Type)
	}
	if e.Digest != "" {
		b = appendField(b, "digest", e.Digest)
	}
	if e.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, e.Size, 10)
	}
	if e.Mode != 0 {
		b = append(b, `,"mode":"0`...)
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, '"')
	}
	if !e.MTime.IsZero() {
		b = append(b, `,"mtime":"`...)
		b = e.MTime.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if e.Target != "" {
		b = appendField(b, "target", e.Target)
	}
	if e.Delta != "" {
		b = appendField(b, "base", e.Base)
		b = appendField(b, "delta", e.Delta)
	}
	return append(b, '}')
}

func appendField(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func appendStrings(b []byte, name string, vs []string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	return append(b, ']')
}

// appendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// with encoding/json; callers keep such names out of manifests.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// UnmarshalJSON decodes a manifest; unknown fields are skipped, so a newer
// writer's additions do not stop an older reader.
func (m *Manifest) UnmarshalJSON(data []byte) error {
	d := &decoder{b: data}
	var out Manifest
	err := d.object(func(key string) error {
		var err error
		switch key {
		case "version":
			var n int64
			n, err = d.int()
			out.Version = int(n)
		case "id":
			out.ID, err = d.str()
		case "kind":
			out.Kind, err = d.str()
		case "createdAt":
			out.CreatedAt, err = d.time()
		case "session":
			out.Session, err = d.str()
		case "message":
			out.Message, err = d.str()
		case "note":
			out.Note, err = d.str()
		case "root":
			out.Root, err = d.str()
		case "defaultIgnore":
			out.DefaultIgnore, err = d.strs()
		case "ignore":
			out.Ignore, err = d.strs()
		case "maxFileSize":
			out.MaxFileSize, err = d.int()
		case "tree":
			out.Tree, err = d.str()
		case "entries":
			var n int64
			if n, err = d.int(); err == nil && (n < 0 || n > math.MaxInt32) {
				err = fmt.Errorf("%w: entries %d", ErrCorrupt, n)
			}
			out.Entries = int(n)
		case "files":
			out.Files = []Entry{}
			err = d.array(func() error {
				var e Entry
				if err := d.entry(&e); err != nil {
					return err
				}
				out.Files = append(out.Files, e)
				return nil
			})
		case "skipped":
			err = d.array(func() error {
				var s Skipped
				err := d.object(func(key string) error {
					var err error
					switch key {
					case "path":
						s.Path, err = d.str()
					case "size":
						s.Size, err = d.int()
					case "reason":
						s.Reason, err = d.str()
					default:
						err = d.skip()
					}
					return err
				})
				out.Skipped = append(out.Skipped, s)
				return err
			})
		default:
			err = d.skip()
		}
		return err
	})
	if err == nil {
		d.ws()
		if d.i != len(d.b) {
			err = d.errorf("data after the manifest")
		}
	}
	if err != nil {
		return err
	}
	*m = out
	return nil
}

func (d *decoder) entry(e *Entry) error {
	return d.object(func(key string) error {
		var err error
		switch key {
		case "path":
			e.Path, err = d.str()
		case "exists":
			e.Exists, err = d.bool()
		case "type":
			e.Type, err = d.str()
		case "digest":
			e.Digest, err = d.str()
		case "size":
			e.Size, err = d.int()
		case "mode":
			var s string
			if s, err = d.str(); err == nil {
				var v uint64
				v, err = strconv.ParseUint(s, 8, 32)
				if err != nil || v > 0o7777 {
					return d.errorf("mode %q is not octal permission bits", s)
				}
				e.Mode = Mode(v)
			}
		case "mtime":
			e.MTime, err = d.time()
		case "target":
			e.Target, err = d.str()
		case "base":
			e.Base, err = d.str()
		case "delta":
			e.Delta, err = d.str()
		default:
			err = d.skip()
		}
		return err
	})
}

// decoder is a small JSON reader for the manifest's shape.
type decoder struct {
	b []byte
	i int
}

var errSyntax = errors.New("manifest JSON")

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", errSyntax, d.i, fmt.Sprintf(format, args...))
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		return d.errorf("want %q", c)
	}
	d.i++
	return nil
}

// object calls field for each key, positioned at its value.
func (d *decoder) object(field func(key string) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.errorf("want ',' or '}'")
		}
	}
}

func (d *decoder) array(elem func() error) error {
	if d.peek() == 'n' {
		return d.null()
	}
	if err := d.expect('['); err != nil {
		return err
	}
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.errorf("want ',' or ']'")
		}
	}
}

func (d *decoder) null() error {
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return nil
	}
	return d.errorf("bad literal")
}

func (d *decoder) strs() ([]string, error) {
	var out []string
	err := d.array(func() error {
		s, err := d.str()
		out = append(out, s)
		return err
	})
	return out, err
}

func (d *decoder) bool() (bool, error) {
	d.ws()
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		return true, nil
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		return false, nil
	}
	return false, d.errorf("want a boolean")
}

func (d *decoder) int() (int64, error) {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	if err != nil {
		return 0, d.errorf("want an integer")
	}
	return n, nil
}

func (d *decoder) time() (time.Time, error) {
	s, err := d.str()
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, d.errorf("bad time %q", Clip(s))
	}
	return t, nil
}

// str reads a JSON string, with every escape JSON has.
func (d *decoder) str() (string, error) {
	if d.peek() != '"' {
		return "", d.errorf("want a string")
	}
	d.i++
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			return s, nil
		case c == '\\':
			return d.strSlow(start)
		case c < 0x20:
			return "", d.errorf("control character in string")
		}
		d.i++
	}
	return "", d.errorf("unterminated string")
}

func (d *decoder) strSlow(start int) (string, error) {
	out, n, err := jsonscan.AppendUnquoted(append([]byte(nil), d.b[start:d.i]...), d.b[d.i:])
	d.i += n
	if err != nil {
		return "", d.errorf("%v", err)
	}
	return string(out), nil
}

// skip passes over any JSON value.
func (d *decoder) skip() error {
	switch d.peek() {
	case '"':
		_, err := d.str()
		return err
	case '{':
		return d.object(func(string) error { return d.skip() })
	case '[':
		return d.array(d.skip)
	case 't', 'f':
		_, err := d.bool()
		return err
	case 'n':
		return d.null()
	}
	d.ws()
	start := d.i
	for d.i < len(d.b) && (d.b[d.i] == '-' || d.b[d.i] == '+' || d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E' || '0' <= d.b[d.i] && d.b[d.i] <= '9') {
		d.i++
	}
	if d.i == start {
		return d.errorf("want a value")
	}
	return nil
}
