package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// object is a JSON object with its members in their order, values as
// written: a settings file is edited without reordering or dropping what
// trove does not know.
type object []member

type member struct {
	key string
	val json.RawMessage
}

// parseObject reads a JSON object; empty input is an empty object.
func parseObject(b []byte) (object, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return object{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %w", fs.ErrInvalid)
	}
	var o object
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", fs.ErrInvalid, err)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %v", fs.ErrInvalid, err)
		}
		o = append(o, member{t.(string), v})
	}
	if _, err := d.Token(); err != nil {
		return nil, fmt.Errorf("%w: %v", fs.ErrInvalid, err)
	}
	return o, nil
}

func (o object) get(key string) json.RawMessage {
	for _, m := range o {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// set replaces key's value in place, or adds it at the end; nil deletes it.
func (o object) set(key string, v json.RawMessage) object {
	for i, m := range o {
		if m.key == key {
			if v == nil {
				return append(o[:i:i], o[i+1:]...)
			}
			o[i].val = v
			return o
		}
	}
	if v == nil {
		return o
	}
	return append(o, member{key, v})
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(m.key)
		b = append(append(append(b, k...), ':'), m.val...)
	}
	return append(b, '}'), nil
}

// claudeHook is one hook entry of Claude Code's settings.
type claudeHook struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

// agent is an agent whose hooks trove installs: where its settings are,
// the events trove's entries handle and what its transcripts are.
type agent struct {
	name    string // as in `trove hooks run NAME`
	format  string // of its transcripts, for the importer
	project string // settings file under a project directory
	user    string // under the home directory; env overrides the directory
	env     string
	events  []hookEvent
	tools   map[string]bool // the tools a checkpoint is taken before
}

type hookEvent struct {
	event, matcher string
	timeout        int // seconds; 0: the agent's default
}

// agentNamed is the agent called name.
func agentNamed(name string) (agent, error) {
	switch name {
	case "claude":
		return claudeAgent(), nil
	case "codex":
		return codexAgent(), nil
	}
	return agent{}, usageErr("hooks for %q: trove installs hooks for claude and codex (pi: trove watch)", name)
}

func claudeAgent() agent {
	return agent{name: "claude", format: "claude", project: ".claude/settings.json", user: ".claude/settings.json",
		events: []hookEvent{{"PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash", 30}, {"Stop", "", 60}, {"SessionEnd", "", 60}},
		tools:  map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true, "Bash": true}}
}

// codexAgent: Codex reads hooks.json beside its config (openai/codex's
// hook discovery); its PreToolUse covers Bash and apply_patch.
func codexAgent() agent {
	return agent{name: "codex", format: "codex", project: ".codex/hooks.json", user: ".codex/hooks.json", env: "CODEX_HOME",
		events: []hookEvent{{"PreToolUse", "Bash|apply_patch", 0}, {"Stop", "", 0}},
		tools:  map[string]bool{"Bash": true, "apply_patch": true}}
}

// marker ends the command of every hook entry trove installs for ag.
func (ag agent) marker() string { return " hooks run " + ag.name }

// userFile is the agent's settings file for every project.
func (ag agent) userFile() (string, error) {
	if dir := os.Getenv(ag.env); ag.env != "" && dir != "" {
		return filepath.Join(dir, filepath.Base(ag.user)), nil
	}
	home, err := os.UserHomeDir()
	return filepath.Join(home, filepath.FromSlash(ag.user)), err
}

// ours reports whether a hook entry is one trove installed for ag.
func (ag agent) ours(h json.RawMessage) bool {
	var e claudeHook
	return json.Unmarshal(h, &e) == nil && strings.HasSuffix(e.Command, ag.marker())
}

// editHooks rewrites the "hooks" of an agent's settings: trove's entries
// removed from every group (groups left empty go, events left empty go),
// then, when command is not empty, one group per event calling it.
func (ag agent) editHooks(settings []byte, command string) ([]byte, error) {
	top, err := parseObject(settings)
	if err != nil {
		return nil, err
	}
	hooks, err := parseObject(top.get("hooks"))
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	for _, m := range append(object(nil), hooks...) {
		var groups []json.RawMessage
		if err := json.Unmarshal(m.val, &groups); err != nil {
			continue // not what Claude Code reads either: left as it is
		}
		kept := []json.RawMessage{}
		for _, g := range groups {
			g, keep, err := ag.dropOurs(g)
			if err != nil {
				return nil, err
			}
			if keep {
				kept = append(kept, g)
			}
		}
		var v json.RawMessage
		if len(kept) > 0 {
			v, _ = json.Marshal(kept)
		}
		hooks = hooks.set(m.key, v)
	}
	if command != "" {
		for _, e := range ag.events {
			var groups []json.RawMessage
			json.Unmarshal(hooks.get(e.event), &groups)
			h, _ := json.Marshal(claudeHook{Type: "command", Command: command, Timeout: e.timeout})
			g := object{}
			if e.matcher != "" {
				m, _ := json.Marshal(e.matcher)
				g = g.set("matcher", m)
			}
			g = g.set("hooks", json.RawMessage("["+string(h)+"]"))
			gb, _ := g.MarshalJSON()
			v, _ := json.Marshal(append(groups, gb))
			hooks = hooks.set(e.event, v)
		}
	}
	var hv json.RawMessage
	if len(hooks) > 0 {
		hv, _ = hooks.MarshalJSON()
	}
	top = top.set("hooks", hv)
	raw, _ := top.MarshalJSON()
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// dropOurs removes trove's entries from a matcher group, reporting
// whether the group still holds any.
func (ag agent) dropOurs(g json.RawMessage) (json.RawMessage, bool, error) {
	o, err := parseObject(g)
	if err != nil {
		return g, true, nil // not an object: not ours to judge
	}
	var hs []json.RawMessage
	if json.Unmarshal(o.get("hooks"), &hs) != nil {
		return g, true, nil
	}
	kept := []json.RawMessage{}
	for _, h := range hs {
		if !ag.ours(h) {
			kept = append(kept, h)
		}
	}
	if len(kept) == 0 {
		return nil, false, nil
	}
	v, _ := json.Marshal(kept)
	b, err := o.set("hooks", v).MarshalJSON()
	return b, true, err
}

// installedCommand is the command of trove's PreToolUse entry in the
// settings file at path, "" when there is none.
func (ag agent) installedCommand(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	top, err := parseObject(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	hooks, err := parseObject(top.get("hooks"))
	if err != nil {
		return "", nil
	}
	var groups []struct {
		Hooks []claudeHook `json:"hooks"`
	}
	json.Unmarshal(hooks.get("PreToolUse"), &groups)
	for _, g := range groups {
		for _, h := range g.Hooks {
			if strings.HasSuffix(h.Command, ag.marker()) {
				return h.Command, nil
			}
		}
	}
	return "", nil
}

// writeAtomic replaces path with data through a temporary file, keeping
// the file's mode (0644 for a new file).
func writeAtomic(path string, data []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".settings-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
