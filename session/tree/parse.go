package tree

import (
	"bytes"
	"fmt"

	"github.com/trovekit/trove/internal/jsonl"
	"github.com/trovekit/trove/internal/jsonscan"
)

// parsed is a session file after the lenient parse (pi session v3 "Load and
// Compatibility Behavior", with the reference's actual behaviour).
type parsed struct {
	header    Header
	headerRaw []byte // nil when the file has no valid header
	headerOK  bool
	// entries are the lines that parsed after the header line, in file
	// order. Later "session" lines are kept here as entries, as the
	// reference does (migration bumps their version too).
	entries []*Entry
	torn    bool // the data does not end with a newline
	empty   bool // nothing parsed at all
}

// parseFile splits data into lines and keeps every line that is valid JSON.
// The first such line is the header; when it is not a valid header the file
// counts as empty (headerOK false) and entries stay empty.
func parseFile(data []byte, report func(Problem)) *parsed {
	p := &parsed{torn: len(data) > 0 && data[len(data)-1] != '\n'}
	// A byte order mark (editors on Windows add one) would make the header
	// invalid and the whole file look empty.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	first := true
	lineNo := 0
	// One allocation for every entry, and one scratch slice for the members
	// of each line: what an entry keeps points into data.
	slab := make([]Entry, 0, bytes.Count(data, []byte("\n"))+1)
	p.entries = make([]*Entry, 0, cap(slab))
	var scratch jsonscan.Members
	arena := strArena{buf: make([]byte, 0, 48*cap(slab)), refs: make([]strRef, 0, 3*cap(slab))}
	defer arena.done()
	for len(data) > 0 {
		lineNo++
		var line []byte
		line, data, _ = jsonl.Cut(data)
		line = trimLine(line)
		if len(line) == 0 {
			continue
		}
		valid, top, role := jsonscan.ScanLine(line, scratch[:0])
		scratch = top
		if !valid {
			what := "not valid JSON"
			if len(data) == 0 && p.torn {
				what = "torn last line"
			}
			report(Problem{Line: lineNo, Err: fmt.Errorf("%s (%d bytes): %w", what, len(line), ErrCorrupt)})
			continue
		}
		if first {
			first = false
			h, ok := parseHeader(top)
			if !ok {
				report(Problem{Line: lineNo, Err: fmt.Errorf("first parsed line is not a session header: %w", ErrNoHeader)})
				return p
			}
			p.header, p.headerRaw, p.headerOK = h, line, true
			continue
		}
		slab = append(slab, Entry{view: line, line: lineNo})
		e := &slab[len(slab)-1]
		if top != nil {
			e.fillScanned(top, role, &arena)
		}
		p.entries = append(p.entries, e)
	}
	if first {
		p.empty = true
	}
	return p
}

// trimLine drops the JSON whitespace around a line (CRLF files, indented
// lines), so stored bytes are the value alone.
func trimLine(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && isWS(b[i]) {
		i++
	}
	for j > i && isWS(b[j-1]) {
		j--
	}
	return b[i:j]
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
