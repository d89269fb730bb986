package tree

import (
	"bytes"
	"encoding/json"

	"github.com/trovekit/trove/internal/jsonscan"
)

// Agent JSONL files (another agent's dialect, docs/formats.md:
// snake_case fields, a top-level role, `branch` entries, `tool_call`
// blocks, `tool_result` messages) are read into the v3 model: each line is converted on load, and a session
// opened for writing is rewritten as v3, as a migration is. trove writes
// only v3.

// isAgentJSONL reports whether data is an agent JSONL file: its header is
// a session header and some entry carries an agent JSONL field or type.
func isAgentJSONL(data []byte) bool {
	// The first entry says: v3 entries have parentId (one pass over the
	// lines up to there, not over the file).
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if valid, _ := jsonscan.Scan(line); !valid {
			continue
		}
		e, ok := jsonscan.SplitObject(line)
		if !ok {
			continue
		}
		switch {
		case e.Get("parentId") != nil:
			return false // a v3 entry: not this dialect
		case e.Get("parent_id") != nil, e.Get("first_kept_entry_id") != nil:
			return true
		case string(e.Get("type")) == `"branch"`:
			return true
		}
	}
	return false
}

// fromAgentJSONL converts an agent JSONL file to v3 lines. Lines that are not JSON
// objects stay as they are, for the lenient parser to report.
func fromAgentJSONL(data []byte) []byte {
	// The file is rewritten as v3 text, decoded as the reference decodes
	// it: encoding/json would replace invalid UTF-8 byte by byte.
	data = jsonscan.ToValidUTF8(data)
	lines := bytes.Split(data, []byte("\n"))
	objs := make([]map[string]json.RawMessage, len(lines))
	var header map[string]json.RawMessage
	for i, line := range lines {
		var e map[string]json.RawMessage
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &e) != nil {
			continue
		}
		objs[i] = e
		switch jsonStr(e["type"]) {
		case TypeSession:
			if header == nil {
				header = e
				e["version"] = json.RawMessage("3")
			}
			continue
		case TypeMessage:
			delete(e, "role") // v3 keeps the role in the message only
			if m, ok := e["message"]; ok {
				e["message"] = message002(m)
			}
		case TypeCompaction:
			rename(e, "first_kept_entry_id", "firstKeptEntryId")
			rename(e, "tokens_before", "tokensBefore")
		case "branch":
			// Lineage goes to the header; the entry becomes a custom
			// entry, which stays out of the context in v3 as in agent JSONL.
			if p, ok := e["parent_session_path"]; ok && header != nil {
				if _, set := header["parentSession"]; !set {
					header["parentSession"] = p
				}
			}
			d := map[string]json.RawMessage{}
			for _, k := range []string{"parent_session_path", "fork_entry_id", "branch_summary"} {
				if v, ok := e[k]; ok {
					d[k] = v
					delete(e, k)
				}
			}
			e["type"] = json.RawMessage(`"custom"`)
			// A value written into session files: kept as it was named
			// before agent JSONL had its name, so files stay alike.
			e["customType"] = json.RawMessage(`"spec002-branch"`)
			e["data"] = mustJSON(d)
		}
		rename(e, "parent_id", "parentId")
		if p, ok := e["parentId"]; !ok || string(p) == `""` {
			e["parentId"] = json.RawMessage("null")
		}
	}
	var out bytes.Buffer
	for i, line := range lines {
		if i > 0 {
			out.WriteByte('\n')
		}
		if objs[i] == nil {
			out.Write(line)
			continue
		}
		out.Write(mustJSON(objs[i]))
	}
	return out.Bytes()
}

// message002 converts one agent JSONL message object to the v3 AgentMessage.
func message002(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if jsonStr(m["role"]) == "tool_result" {
		m["role"] = json.RawMessage(`"toolResult"`)
	}
	rename(m, "tool_call_id", "toolCallId")
	rename(m, "tool_name", "toolName")
	rename(m, "is_error", "isError")
	rename(m, "stop_reason", "stopReason")
	if u, ok := m["usage"]; ok {
		var um map[string]json.RawMessage
		if json.Unmarshal(u, &um) == nil {
			rename(um, "cache_read", "cacheRead")
			rename(um, "cache_write", "cacheWrite")
			rename(um, "total_tokens", "totalTokens")
			m["usage"] = mustJSON(um)
		}
	}
	if c, ok := m["content"]; ok {
		var blocks []map[string]json.RawMessage
		if json.Unmarshal(c, &blocks) == nil {
			for _, b := range blocks {
				if jsonStr(b["type"]) == "tool_call" {
					b["type"] = json.RawMessage(`"toolCall"`)
				}
			}
			m["content"] = mustJSON(blocks)
		}
	}
	return mustJSON(m)
}

func rename(m map[string]json.RawMessage, from, to string) {
	if v, ok := m[from]; ok {
		if _, taken := m[to]; !taken {
			m[to] = v
		}
		delete(m, from)
	}
}

func jsonStr(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// mustJSON marshals values built from decoded JSON, which always marshal.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
