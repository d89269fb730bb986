package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Rec is one line of a machine's journal: an operation the store
// acknowledged (or, for hold, a writer lock taken), written after the call
// returned. Times are the real clock of the host, not the machine's
// offset one, so the verifier can order every machine's records.
type Rec struct {
	Op      string            `json:"op"` // hold, msg, close, fork, cp, rewind, run, gc, mirror, list, refused, read
	Machine int               `json:"m"`
	Inc     int               `json:"inc"` // the machine's incarnation (restart count)
	At      time.Time         `json:"at"`  // when the call returned
	Start   time.Time         `json:"start,omitzero"`
	Session string            `json:"sid,omitempty"`
	Path    string            `json:"path,omitempty"` // the session file: found without a listing
	Text    string            `json:"text,omitempty"` // a message's text, unique
	Blob    string            `json:"blob,omitempty"` // sha256 hex of a payload the message carries
	From    string            `json:"from,omitempty"` // fork: source session; hold: who held it before
	N       int               `json:"n,omitempty"`    // fork: messages copied; run: events; read: messages seen
	Name    string            `json:"name,omitempty"` // checkpoint id; run id
	Files   map[string]string `json:"files,omitempty"`
	Bad     int               `json:"bad,omitempty"` // read/list: what it found wrong
	Note    string            `json:"note,omitempty"`
}

// journal appends records to a file, one write per record: a SIGKILL
// loses no completed write (the page cache outlives the process).
type journal struct {
	mu sync.Mutex
	f  *os.File
	m  int
	in int
}

func openJournal(dir string, machine, inc int) (*journal, error) {
	f, err := os.OpenFile(journalPath(dir, machine), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &journal{f: f, m: machine, in: inc}, nil
}

func journalPath(dir string, machine int) string {
	return filepath.Join(dir, fmt.Sprintf("m%02d.jsonl", machine))
}

func (j *journal) add(r Rec) error {
	r.Machine, r.Inc = j.m, j.in
	if r.At.IsZero() {
		r.At = time.Now()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.f.Write(append(b, '\n'))
	return err
}

func (j *journal) close() error { return j.f.Close() }

// readJournal reads a machine's records; a torn last line (a writer
// killed mid-write, or one still writing) is skipped.
func readJournal(dir string, machine int) ([]Rec, error) {
	f, err := os.Open(journalPath(dir, machine))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Rec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r Rec
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// readAll reads every machine's journal, ordered by time.
func readAll(dir string, machines int) ([]Rec, error) {
	var all []Rec
	for m := range machines {
		rs, err := readJournal(dir, m)
		if err != nil {
			return nil, err
		}
		all = append(all, rs...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At.Before(all[j].At) })
	return all, nil
}
