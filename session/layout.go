package session

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/session/tree"
)

// The store layout of DESIGN section 9, relative to the trove root:
//
//	sessions/--<cwd-encoded>--/<timestamp>_<id>.jsonl
//	terminal-sessions/<terminal-id>
const (
	SessionsDir    = "sessions"
	BreadcrumbsDir = "terminal-sessions"
	// PrefixBytes is how much of each file discovery reads.
	PrefixBytes = 4096
)

// EncodeCwd names the directory of a working directory's sessions: the
// leading slash dropped, "/", "\" and ":" replaced by "-", wrapped in "--"
// (pi session v3). Names that would not be valid path elements are made valid:
// control characters and invalid UTF-8 become "-", and an element longer
// than 255 bytes is cut and ends with a hash of the whole cwd.
func EncodeCwd(cwd string) string {
	s := cwd
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) {
		s = s[1:]
	}
	s = strings.ToValidUTF8(s, "-")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == ':':
			return '-'
		case r < 0x20 || r == 0x7f:
			return '-'
		}
		return r
	}, s)
	name := "--" + s + "--"
	if len(name) > backend.MaxElemBytes {
		sum := sha256.Sum256([]byte(cwd))
		tail := "-" + hex.EncodeToString(sum[:8]) + "--"
		cut := strings.ToValidUTF8(name[:backend.MaxElemBytes-len(tail)], "")
		name = cut + tail
	}
	return name
}

// CwdDir is the directory holding the sessions of cwd.
func CwdDir(cwd string) string { return backend.Join(SessionsDir, EncodeCwd(cwd)) }

// FileName is a session's file name: the creation time as the reference
// writes it (ISO 8601 with ":" and "." as "-") and the id.
func FileName(created time.Time, id string) string {
	ts := strings.NewReplacer(":", "-", ".", "-").Replace(tree.FormatTime(created))
	return ts + "_" + id + ".jsonl"
}

// SessionPath is where a new session of cwd is stored.
func SessionPath(cwd string, created time.Time, id string) string {
	return backend.Join(CwdDir(cwd), FileName(created, id))
}

// BreadcrumbPath is the breadcrumb file of a terminal.
func BreadcrumbPath(terminalID string) string {
	return backend.Join(BreadcrumbsDir, EncodeCwd(terminalID))
}

// idFromName returns the id in a "<timestamp>_<id>.jsonl" file name.
func idFromName(base string) string {
	base = strings.TrimSuffix(base, ".jsonl")
	if i := strings.LastIndexByte(base, '_'); i >= 0 {
		return base[i+1:]
	}
	return base
}

// Info is what discovery knows of a session from the first PrefixBytes of
// its file.
type Info struct {
	Path          string    // file name in the storage
	ID            string    // header id
	Cwd           string    // header cwd
	Title         string    // header title
	ParentSession string    // header parentSession
	Version       float64   // header version
	Created       time.Time // header timestamp (zero when it does not parse)
	Modified      time.Time // the file's modification time
	Size          int64     // the file's size in bytes
	FirstMessage  string    // text of the first user message, if in the prefix
}

// readInfo reads a session's header and first user message from a prefix.
func readInfo(ctx context.Context, st backend.Storage, fi backend.Info) (Info, error) {
	data, err := st.ReadPrefix(ctx, fi.Name, PrefixBytes)
	if err != nil {
		return Info{}, err
	}
	info := Info{Path: fi.Name, Modified: fi.ModTime, Size: fi.Size}
	if len(data) == 0 && fi.Size == 0 {
		// A writer killed between creating the file and its first write:
		// still a session (its sidecar says the rest), resumable.
		info.ID = idFromName(backend.Base(fi.Name))
		return info, nil
	}
	p, err := tree.ScanPrefix(data, int64(len(data)) >= fi.Size)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", fi.Name, err)
	}
	h := p.Header
	info.ID, info.Cwd, info.Title, info.ParentSession, info.Version = h.ID, h.Cwd, h.Title, h.ParentSession, h.Version
	info.Created, info.FirstMessage = p.Created, p.FirstMessage
	return info, nil
}

// Discovery says what Discover reads.
type Discovery struct {
	Cwd string // the sessions of this cwd; every cwd's when All is set
	All bool
	// Skipped, when set, hears of the files discovery skips (no header
	// in the prefix, unreadable) and why.
	Skipped func(path string, err error)
	// Concurrency is how many prefixes are read at once (default 16).
	Concurrency int
}

// Discover reads sessions the way pi session v3's discovery does, from their
// files alone (a prefix of each: the header and first user message),
// newest first by modification time, without the listing index: what a
// store written by another program, or a check of the index, needs. Files
// whose header names another cwd (two cwds can encode alike) are left out
// of a cwd's sessions. A missing directory yields nothing.
func (s *Store) Discover(ctx context.Context, d Discovery) iter.Seq2[Info, error] {
	if d.All {
		return discoverAll(ctx, s.st, d)
	}
	return discover(ctx, s.st, d)
}

func discover(ctx context.Context, st backend.Storage, d Discovery) iter.Seq2[Info, error] {
	cwd := d.Cwd
	return func(yield func(Info, error) bool) {
		files, err := sessionFiles(ctx, st, []string{CwdDir(cwd)})
		if err != nil {
			yield(Info{}, err)
			return
		}
		for info, err := range readInfos(ctx, st, files, d) {
			if err == nil && info.Cwd != "" && info.Cwd != cwd {
				continue
			}
			if !yield(info, err) {
				return
			}
		}
	}
}

func discoverAll(ctx context.Context, st backend.Storage, d Discovery) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		var dirs []string
		for fi, err := range st.List(ctx, SessionsDir) {
			if errors.Is(err, fs.ErrNotExist) {
				return
			}
			if err != nil {
				yield(Info{}, err)
				return
			}
			if fi.IsDir && strings.HasPrefix(fi.Base(), "--") {
				dirs = append(dirs, fi.Name)
			}
		}
		files, err := sessionFiles(ctx, st, dirs)
		if err != nil {
			yield(Info{}, err)
			return
		}
		for info, err := range readInfos(ctx, st, files, d) {
			if !yield(info, err) {
				return
			}
		}
	}
}

// sessionFiles lists the .jsonl files of dirs, newest first.
func sessionFiles(ctx context.Context, st backend.Storage, dirs []string) ([]backend.Info, error) {
	var files []backend.Info
	for _, dir := range dirs {
		for fi, err := range st.List(ctx, dir) {
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return nil, err
			}
			if !fi.IsDir && strings.HasSuffix(fi.Name, ".jsonl") {
				files = append(files, fi)
			}
		}
	}
	slices.SortStableFunc(files, func(a, b backend.Info) int {
		if c := b.ModTime.Compare(a.ModTime); c != 0 {
			return c
		}
		// Equal times (coarse clocks of some stores): the file name starts
		// with the creation time, then the id.
		if c := cmp.Compare(backend.Base(b.Name), backend.Base(a.Name)); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	})
	return files, nil
}

// readInfos reads the prefixes of files a window at a time, several at
// once, and yields them in order. Skipped files are reported, not yielded.
func readInfos(ctx context.Context, st backend.Storage, files []backend.Info, d Discovery) iter.Seq2[Info, error] {
	conc := d.Concurrency
	if conc <= 0 {
		conc = 16
	}
	return func(yield func(Info, error) bool) {
		type result struct {
			info Info
			err  error
		}
		window := conc * 4
		for start := 0; start < len(files); start += window {
			if err := ctx.Err(); err != nil {
				yield(Info{}, err)
				return
			}
			batch := files[start:min(start+window, len(files))]
			results := make([]result, len(batch))
			parallel(len(batch), conc, func(i int) {
				info, err := readInfo(ctx, st, batch[i])
				results[i] = result{info, err}
			})
			for i, r := range results {
				if r.err != nil {
					if errors.Is(r.err, tree.ErrNoHeader) || errors.Is(r.err, fs.ErrNotExist) {
						// Not a session (or gone since the listing): skip.
						if d.Skipped != nil {
							d.Skipped(batch[i].Name, r.err)
						}
						continue
					}
					if !yield(Info{}, r.err) {
						return
					}
					continue
				}
				if !yield(r.info, nil) {
					return
				}
			}
		}
	}
}

// TerminalID names the terminal this process runs in, from environment
// variables terminals set (getenv is os.Getenv outside tests); "" when none
// is known. tmux and screen panes come first: they outlive the window.
func TerminalID(getenv func(string) string) string {
	for _, k := range []string{"TMUX_PANE", "STY", "WT_SESSION", "TERM_SESSION_ID", "KITTY_WINDOW_ID", "WEZTERM_PANE", "ITERM_SESSION_ID", "WINDOWID"} {
		if v := getenv(k); v != "" {
			return strings.ToLower(k) + "-" + v
		}
	}
	return ""
}

// WriteBreadcrumb records that terminalID last used the session at path in
// cwd: two lines, the cwd then the session path (pi session v3).
func WriteBreadcrumb(ctx context.Context, st backend.Storage, terminalID, cwd, path string) error {
	if terminalID == "" {
		return fmt.Errorf("breadcrumb: empty terminal id: %w", tree.ErrInvalid)
	}
	return st.WriteFile(ctx, BreadcrumbPath(terminalID), []byte(cwd+"\n"+path+"\n"))
}

// ReadBreadcrumb returns the cwd and session path terminalID used last.
func ReadBreadcrumb(ctx context.Context, st backend.Storage, terminalID string) (cwd, path string, err error) {
	if terminalID == "" {
		return "", "", fmt.Errorf("breadcrumb: empty terminal id: %w", tree.ErrInvalid)
	}
	data, err := st.ReadFile(ctx, BreadcrumbPath(terminalID))
	if err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	if len(lines) < 2 {
		return "", "", fmt.Errorf("breadcrumb %s: want two lines: %w", terminalID, tree.ErrCorrupt)
	}
	return strings.TrimRight(lines[0], "\r"), strings.TrimRight(lines[1], "\r"), nil
}

// Recent finds the session to continue in cwd from the files: the one the
// terminal used last when its breadcrumb names this cwd and a session that
// still loads, else the newest of cwd (fs.ErrNotExist when there is
// none). terminalID may be "".
func (s *Store) Recent(ctx context.Context, cwd, terminalID string) (Info, error) {
	if terminalID != "" {
		bcwd, p, err := ReadBreadcrumb(ctx, s.st, terminalID)
		if err == nil && bcwd == cwd && backend.ValidPath(p) == nil {
			if fi, err := s.st.Stat(ctx, p); err == nil && !fi.IsDir {
				if info, err := readInfo(ctx, s.st, fi); err == nil {
					return info, nil
				}
			}
		}
	}
	for info, err := range discover(ctx, s.st, Discovery{Cwd: cwd}) {
		return info, err
	}
	return Info{}, &fs.PathError{Op: "find", Path: CwdDir(cwd), Err: fs.ErrNotExist}
}

// findFile resolves ref when it names a session file; ok is false when it
// is not one (an id, or a name that is not there).
func findFile(ctx context.Context, st backend.Storage, ref string) (name string, ok bool, err error) {
	if ref == "" {
		return "", false, fmt.Errorf("find session: empty reference: %w", tree.ErrInvalid)
	}
	if backend.ValidPath(ref) == nil && (strings.Contains(ref, "/") || strings.HasSuffix(ref, ".jsonl")) {
		if fi, err := st.Stat(ctx, ref); err == nil && !fi.IsDir {
			return ref, true, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", false, err
		}
	}
	return "", false, nil
}

// ContextFor does the work of `trove session context`: it finds the
// session ref (see Find), loads it read-only and rebuilds its context at
// leafID, or at the file's leaf when leafID is "". The result marshals to
// the JSON object of pi session v3's names (leafId, messages, thinkingLevel,
// models, injectedTtsrRules, mode, modeData).
func (s *Store) ContextFor(ctx context.Context, ref, leafID string) (*tree.Context, error) {
	name, err := s.Find(ctx, ref)
	if err != nil {
		return nil, err
	}
	sess, err := tree.Open(ctx, s.st, name, s.sessionOpts(tree.ReadOnly())...)
	if err != nil {
		return nil, err
	}
	if !sess.HasHeader() {
		return nil, sess.Err()
	}
	if leafID == "" {
		return sess.Context(), nil
	}
	return sess.ContextAt(leafID)
}

// MinAbbrev is the shortest id abbreviation accepted from the end of an id.
const MinAbbrev = 4

// MatchID reports whether ref abbreviates id: a prefix of it, or, from
// MinAbbrev characters on, a suffix. Session ids are uuid v7, whose first
// 12 hex digits are the creation time in milliseconds, so sessions made
// within a minute share their first 8 and within weeks their first 4; the
// end of the id is random, so a few characters from there tell any two
// sessions apart. Abbrev gives the shortest such suffix.
func MatchID(id, ref string) bool {
	return strings.HasPrefix(id, ref) || (len(ref) >= MinAbbrev && strings.HasSuffix(id, ref))
}

// Abbrev gives, for each of ids in order, its shortest abbreviation that
// MatchID resolves to it alone among ids: a suffix of at least MinAbbrev
// characters (the id itself when no shorter one is unique, as for a
// duplicate). It sorts instead of counting every suffix length in maps:
// 10,000 ids take about a millisecond.
func Abbrev(ids []string) []string {
	// A suffix is unique among suffixes when it is longer than the longest
	// common suffix with its neighbours in the order of reversed ids,
	// compared sixteen bytes at a time as two numbers (uuid tails differ
	// within them).
	type item struct {
		k1, k2 uint64 // the last 16 bytes, last first
		i      int32
	}
	order := make([]item, len(ids))
	for i, id := range ids {
		order[i] = item{revKey(id, 0), revKey(id, 8), int32(i)}
	}
	slices.SortFunc(order, func(a, b item) int {
		if c := cmp.Compare(a.k1, b.k1); c != 0 {
			return c
		}
		if c := cmp.Compare(a.k2, b.k2); c != 0 {
			return c
		}
		return compareReversed(ids[a.i], ids[b.i])
	})
	need := make([]int, len(ids))
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		var n int
		switch {
		case a.k1 != b.k1:
			n = bits.LeadingZeros64(a.k1^b.k1) / 8
		case a.k2 != b.k2:
			n = 8 + bits.LeadingZeros64(a.k2^b.k2)/8
		default:
			n = commonSuffix(ids[a.i], ids[b.i])
		}
		// The keys' zeros past a short id's start may match NULs of the
		// other.
		n = min(n, len(ids[a.i]), len(ids[b.i])) + 1
		need[a.i], need[b.i] = max(need[a.i], n), max(need[b.i], n)
	}
	// A suffix must not also start another id. Ids mostly start alike (a
	// time) and end at random, so the ids' first MinAbbrev characters rule
	// out most suffixes before the sorted ids are needed.
	starts := make(map[string]struct{}, 16)
	for _, id := range ids {
		starts[id[:min(len(id), MinAbbrev)]] = struct{}{}
	}
	out := make([]string, len(ids))
	var sorted []string
	for i, id := range ids {
		n := max(need[i], MinAbbrev)
		for ; n < len(id); n++ {
			suf := id[len(id)-n:]
			if _, ok := starts[suf[:MinAbbrev]]; !ok {
				break
			}
			if sorted == nil {
				sorted = slices.Clone(ids)
				slices.Sort(sorted)
			}
			if !startsAnother(sorted, id, suf) {
				break
			}
		}
		out[i] = id[len(id)-min(n, len(id)):]
	}
	return out
}

// revKey packs the 8 bytes of s from off bytes before its end backwards
// (s[len-1-off] highest), zeros past its start: ordering keys orders the
// reversed strings.
func revKey(s string, off int) uint64 {
	var k uint64
	for d := range 8 {
		k <<= 8
		if p := len(s) - 1 - off - d; p >= 0 {
			k |= uint64(s[p])
		}
	}
	return k
}

// compareReversed compares a and b read from their ends.
func compareReversed(a, b string) int {
	n := commonSuffix(a, b)
	switch {
	case n == len(a) && n == len(b):
		return 0
	case n == len(a):
		return -1
	case n == len(b):
		return 1
	}
	return cmp.Compare(a[len(a)-1-n], b[len(b)-1-n])
}

func commonSuffix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			return i
		}
	}
	return n
}

// startsAnother reports whether an id of sorted other than self starts
// with p.
func startsAnother(sorted []string, self, p string) bool {
	i, _ := slices.BinarySearch(sorted, p)
	for ; i < len(sorted) && strings.HasPrefix(sorted[i], p); i++ {
		if sorted[i] != self {
			return true
		}
	}
	return false
}
