package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/trovekit/trove/backend"
)

// State is a session state snapshot for resume (the run log spec, section 3.1): the
// session's history as the agent holds it. Fields this version does not
// know are kept in Extra and written back.
type State struct {
	SchemaVersion int               `json:"schema_version"`
	SessionID     string            `json:"session_id"`
	UpdatedAt     Time              `json:"updated_at"`
	RunID         string            `json:"run_id,omitempty"`
	InvokeSeq     int64             `json:"invoke_seq,omitempty"`
	Messages      []json.RawMessage `json:"messages"`
	Meta          json.RawMessage   `json:"meta,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

type stateFields State // State without its methods

var stateKeys = sync.OnceValue(func() map[string]bool { return jsonKeys(reflect.TypeFor[stateFields]()) })

// MarshalJSON writes the known fields, then Extra's in key order.
func (st State) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(stateFields(st))
	if err != nil || len(st.Extra) == 0 {
		return b, err
	}
	known := stateKeys()
	buf := bytes.NewBuffer(b[:len(b)-1])
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range st.Extra {
			if !yield(k) {
				return
			}
		}
	}) {
		v := st.Extra[k]
		if known[k] || !json.Valid(v) {
			continue
		}
		kb, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (st *State) UnmarshalJSON(b []byte) error {
	var f stateFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	known := stateKeys()
	for k, v := range all {
		if !known[k] {
			if f.Extra == nil {
				f.Extra = map[string]json.RawMessage{}
			}
			f.Extra[k] = v
		}
	}
	*st = State(f)
	return nil
}

// jsonKeys returns the JSON names of t's fields.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "-" && name != "" {
			keys[name] = true
		}
	}
	return keys
}

// SaveState writes st to state/<session_id>.json atomically and durably: a
// reader, or the file after a crash, holds the old snapshot or the new one.
// It fills schema_version (1) and updated_at (now) when they are zero.
func (s *Store) SaveState(ctx context.Context, st State) error {
	if err := checkID("session id", st.SessionID); err != nil {
		return backend.PathErr("save state", st.SessionID, err)
	}
	path := StatePath(st.SessionID)
	if st.SchemaVersion == 0 {
		st.SchemaVersion = SchemaVersion
	}
	if st.UpdatedAt.IsZero() {
		st.UpdatedAt = TimeOf(s.now())
	}
	if st.Messages == nil {
		st.Messages = []json.RawMessage{}
	}
	if st.RunID != "" {
		if err := checkID("run id", st.RunID); err != nil {
			return backend.PathErr("save state", path, err)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		return backend.PathErr("save state", path, fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	return backend.PathErr("save state", path, s.st.WriteFile(ctx, path, buf.Bytes()))
}

// LoadState reads the snapshot of session id. A missing one is
// fs.ErrNotExist; one that is not a JSON object is ErrCorrupt. An unknown
// schema_version is read best-effort, as the run log spec (section 8) allows.
func (s *Store) LoadState(ctx context.Context, id string) (State, error) {
	if err := checkID("session id", id); err != nil {
		return State{}, backend.PathErr("load state", id, err)
	}
	path := StatePath(id)
	data, err := s.st.ReadFile(ctx, path)
	if err != nil {
		return State{}, backend.PathErr("load state", path, err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, backend.PathErr("load state", path, fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	return st, nil
}
