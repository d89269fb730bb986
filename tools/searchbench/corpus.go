//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trovekit/trove/session"
)

// corpus is a generated store: n sessions of ~35 KB in 20 cwds, words
// drawn from a Zipf distribution over a synthetic vocabulary with code
// identifiers, and planted words each in exactly 5 sessions.
type corpus struct {
	root      string
	files     []string
	planted   []string // each in 5 sessions
	phrases   []string // two common words side by side
	textBytes int64    // bytes of text the catalog indexes
	texts     string   // one JSON string per entry: the baseline's input
	entries   int
}

const plantedWords = 400

func syllables(r *rand.Rand, n int) string {
	cons, vows := "bcdfghklmnprstvz", "aeiou"
	var b strings.Builder
	for range n {
		b.WriteByte(cons[r.IntN(len(cons))])
		b.WriteByte(vows[r.IntN(len(vows))])
	}
	return b.String()
}

func genCorpus(dir string, n int) (*corpus, error) {
	r := rand.New(rand.NewPCG(34, 35))
	vocab := make([]string, 30000)
	for i := range vocab {
		switch i % 10 {
		case 0: // camelCase identifiers
			vocab[i] = syllables(r, 2) + strings.ToUpper(syllables(r, 1)[:1]) + syllables(r, 2)[1:]
		case 1: // snake_case
			vocab[i] = syllables(r, 2) + "_" + syllables(r, 2)
		default:
			vocab[i] = syllables(r, 1+r.IntN(3))
		}
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	text := func(words int) string {
		var b strings.Builder
		for i := range words {
			if i > 0 {
				b.WriteString([]string{" ", " ", " ", ", ", ". ", "\n", "/", "."}[r.IntN(8)])
			}
			b.WriteString(vocab[zipf.Uint64()])
		}
		return b.String()
	}
	c := &corpus{root: filepath.Join(dir, "store")}
	for i := range plantedWords {
		c.planted = append(c.planted, fmt.Sprintf("plantword%04d", i))
	}
	plant := map[int][]string{} // session -> planted words
	for _, w := range c.planted {
		for _, s := range r.Perm(n)[:5] {
			plant[s] = append(plant[s], w)
		}
	}
	// Phrases of two words of middling frequency, each put in 40
	// sessions (and found wherever else the words meet by chance).
	phraseAt := map[int][]string{}
	for range 50 {
		p := vocab[200+r.IntN(2000)] + " " + vocab[200+r.IntN(2000)]
		c.phrases = append(c.phrases, p)
		for _, s := range r.Perm(n)[:min(n, 40)] {
			phraseAt[s] = append(phraseAt[s], p)
		}
	}
	textsFile, err := os.Create(filepath.Join(dir, "texts.jsonl"))
	if err != nil {
		return nil, err
	}
	defer textsFile.Close()
	tw := bufio.NewWriterSize(textsFile, 1<<20)
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		cwd := fmt.Sprintf("/work/p%d", i%20)
		at := created.Add(time.Duration(i) * time.Second)
		id := fmt.Sprintf("01a2214e-0000-7000-8000-%012x", i)
		rel := session.SessionPath(cwd, at, id)
		var b []byte
		hdr, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": id, "timestamp": at.Format(time.RFC3339Nano), "cwd": cwd, "title": text(4)})
		b = append(append(b, hdr...), '\n')
		parent := any(nil)
		extra := plant[i]
		phrases := phraseAt[i]
		for j := 0; len(b) < 35000; j++ {
			var msg map[string]any
			var texts []string
			switch j % 3 {
			case 0:
				t := text(30)
				if len(extra) > 0 {
					t += " " + extra[0]
					extra = extra[1:]
				}
				texts = []string{t}
				msg = map[string]any{"role": "user", "content": t, "timestamp": at.UnixMilli()}
			case 1:
				th, t, cmd := text(25), text(40), text(6)
				if len(phrases) > 0 {
					t += " " + phrases[0] + " " + text(3)
					phrases = phrases[1:]
				}
				texts = []string{th, t, "bash", cmd}
				msg = map[string]any{"role": "assistant", "model": []string{"claude-sonnet-4-5", "gpt-5"}[i%2], "timestamp": at.UnixMilli(),
					"usage": map[string]any{"input": 1200, "output": 300, "cacheRead": 800, "cacheWrite": 0, "cost": map[string]any{"total": 0.004}},
					"content": []any{
						map[string]any{"type": "thinking", "thinking": th},
						map[string]any{"type": "text", "text": t},
						map[string]any{"type": "toolCall", "id": fmt.Sprintf("c%d", j), "name": "bash", "arguments": map[string]any{"command": cmd}},
					}}
			default:
				t := text(180)
				texts = []string{t}
				msg = map[string]any{"role": "toolResult", "toolName": "bash", "toolCallId": fmt.Sprintf("c%d", j-1), "isError": j%7 == 0,
					"timestamp": at.UnixMilli(), "content": []any{map[string]any{"type": "text", "text": t}}}
			}
			eid := fmt.Sprintf("%08x", j)
			line, _ := json.Marshal(map[string]any{"type": "message", "id": eid, "parentId": parent, "timestamp": at.Add(time.Duration(j) * time.Second).Format(time.RFC3339Nano), "message": msg})
			b = append(append(b, line...), '\n')
			parent = eid
			all := strings.Join(texts, "\n")
			c.textBytes += int64(len(all))
			js, _ := json.Marshal(all)
			tw.Write(append(js, '\n'))
			c.entries++
		}
		name := filepath.Join(c.root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			return nil, err
		}
		c.files = append(c.files, name)
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	c.texts = textsFile.Name()
	return c, nil
}
