package tree

import "bytes"

// Lines indexes whole lines of a session file (each ending in a newline)
// into entries, without checking them: for counting what was appended to
// a file written elsewhere.
func Lines(data []byte) []*Entry {
	var out []*Entry
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, newEntry(line, 0))
		}
		data = rest
	}
	return out
}
