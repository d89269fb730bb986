package tree

import (
	"strconv"

	"github.com/trovekit/trove/internal/jsonscan"
)

// migrate brings a parsed file to version 3 in memory, as pi session v3
// "Versioning and Migration" and the reference do, and reports whether
// anything ran (then the file is rewritten once).
//
// v1 -> v2 (version < 2): every entry object that is not a "session" line
// gets a fresh id and parentId = the previous such entry's id, in file order
// (existing ids are overwritten); a compaction's numeric
// firstKeptEntryIndex, which counts the header as 0 among the parsed
// values, becomes firstKeptEntryId. v2 -> v3 (version < 3): message.role
// "hookMessage" becomes "custom". Every "session" line gets the new version.
func migrate(p *parsed, newID func(taken map[string]bool) string) bool {
	if !p.headerOK || p.header.Version >= CurrentVersion {
		return false
	}
	v := p.header.Version
	if v < 2 {
		migrateV1(p, newID)
	}
	if v < 3 {
		migrateV2(p)
	}
	return true
}

func migrateV1(p *parsed, newID func(map[string]bool) string) {
	p.setVersion(2)
	taken := make(map[string]bool, len(p.entries))
	prev := ""
	for i, e := range p.entries {
		ms, ok := jsonscan.SplitObject(e.view)
		if !ok {
			continue // a non-object value cannot carry an id
		}
		if e.typ == TypeSession {
			e.setView(jsonscan.EditObject(ms, jsonscan.Edit{Key: "version", Val: []byte("2")}))
			continue
		}
		id := newID(taken)
		taken[id] = true
		edits := []jsonscan.Edit{{Key: "id", Val: jsonscan.Quote(id)}, {Key: "parentId", Val: []byte("null")}}
		if prev != "" {
			edits[1].Val = jsonscan.Quote(prev)
		}
		if e.typ == TypeCompaction {
			if raw := ms.Get("firstKeptEntryIndex"); isNumber(raw) {
				// Index 0 is the header; entries start at 1.
				if idx, ok := jsonInt(raw); ok && idx >= 1 && idx-1 < len(p.entries) {
					target := p.entries[idx-1]
					if idx-1 == i {
						target = nil // itself: its id is being replaced right now
						edits = append(edits, jsonscan.Edit{Key: "firstKeptEntryId", Val: jsonscan.Quote(id)})
					}
					if target != nil && target.object && target.typ != TypeSession && target.id != "" {
						edits = append(edits, jsonscan.Edit{Key: "firstKeptEntryId", Val: jsonscan.Quote(target.id)})
					}
				}
				edits = append(edits, jsonscan.Edit{Key: "firstKeptEntryIndex", Val: nil})
			}
		}
		e.setView(jsonscan.EditObject(ms, edits...))
		e.id, e.parentID = id, prev
		prev = id
	}
}

func migrateV2(p *parsed) {
	p.setVersion(3)
	for _, e := range p.entries {
		ms, ok := jsonscan.SplitObject(e.view)
		if !ok {
			continue
		}
		switch {
		case e.typ == TypeSession:
			e.setView(jsonscan.EditObject(ms, jsonscan.Edit{Key: "version", Val: []byte("3")}))
		case e.typ == TypeMessage && e.role == "hookMessage":
			msg, _ := jsonscan.SplitObject(ms.Get("message"))
			e.setView(jsonscan.EditObject(ms, jsonscan.Edit{Key: "message", Val: jsonscan.EditObject(msg, jsonscan.Edit{Key: "role", Val: jsonscan.Quote("custom")})}))
			e.role = "custom"
		}
	}
}

func (p *parsed) setVersion(v int) {
	ms, _ := jsonscan.SplitObject(p.headerRaw)
	p.headerRaw = jsonscan.EditObject(ms, jsonscan.Edit{Key: "version", Val: []byte(strconv.Itoa(v))})
	p.header.Version = float64(v)
}

func isNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// jsonInt reads a JSON number that is a whole number.
func jsonInt(raw []byte) (int, bool) {
	if !isNumber(raw) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}
