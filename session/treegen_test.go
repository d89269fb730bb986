package session_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// genTree writes a random session file of pi session v3: every entry type,
// branches, compactions, labels, duplicate ids, missing parents, blob refs
// and damaged lines. version is 1, 2 or 3; v1 files have no ids.
type genTree struct {
	r       *rand.Rand
	version int
	ids     []string
	leaf    string
	lines   []string
	n       int
}

func (g *genTree) id() string {
	g.n++
	if len(g.ids) > 3 && g.r.IntN(40) == 0 {
		return g.ids[g.r.IntN(len(g.ids))] // a duplicate id
	}
	return fmt.Sprintf("%08x", g.r.Uint32())
}

func (g *genTree) ts() string {
	return fmt.Sprintf("2026-02-16T10:%02d:%02d.%03dZ", g.n/60%60, g.n%60, g.r.IntN(1000))
}

// parent picks where the next entry hangs: mostly the leaf, sometimes an
// earlier entry (a branch), a missing id or none.
func (g *genTree) parent() string {
	switch k := g.r.IntN(20); {
	case len(g.ids) == 0 || k == 0:
		return "null"
	case k == 1:
		return `"missing-parent"`
	case k < 5:
		return `"` + g.ids[g.r.IntN(len(g.ids))] + `"`
	}
	return `"` + g.leaf + `"`
}

func (g *genTree) message() string {
	var roles = []string{"user", "assistant", "toolResult", "custom", "bashExecution"}
	role := roles[g.r.IntN(len(roles))]
	if g.version == 2 && g.r.IntN(6) == 0 {
		role = "hookMessage"
	}
	text := fmt.Sprintf("text %d %s", g.n, strings.Repeat("é", g.r.IntN(3)))
	switch role {
	case "user":
		if g.r.IntN(5) == 0 {
			return fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q},{"type":"image","data":"blob:sha256:%064x","mimeType":"image/png"}],"timestamp":%d}`, text, g.r.Uint64(), g.n)
		}
		return fmt.Sprintf(`{"role":"user","content":%q,"timestamp":%d}`, text, g.n)
	case "assistant":
		return fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":%q},{"type":"toolCall","id":"c%d","name":"bash","arguments":{"n":%d}}],"api":"a","provider":"p","model":"m%d","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.5}},"stopReason":"stop","timestamp":%d}`, text, g.n, g.n, g.r.IntN(3), g.n)
	case "toolResult":
		return fmt.Sprintf(`{"role":"toolResult","toolCallId":"c%d","toolName":"bash","content":[{"type":"text","text":%q}],"isError":%v,"timestamp":%d}`, g.n, text, g.r.IntN(2) == 0, g.n)
	}
	return fmt.Sprintf(`{"role":%q,"customType":"x","content":%q,"display":true,"timestamp":%d}`, role, text, g.n)
}

func (g *genTree) entry() string {
	var body string
	switch k := g.r.IntN(30); {
	case k < 16:
		body = `"type":"message","message":` + g.message()
	case k < 18:
		body = fmt.Sprintf(`"type":"thinking_level_change","thinkingLevel":%q`, []string{"low", "high", "off"}[g.r.IntN(3)])
	case k < 20:
		role := []string{"", `,"role":"plan"`, `,"role":"default"`}[g.r.IntN(3)]
		body = fmt.Sprintf(`"type":"model_change","model":"p/m%d"%s`, g.r.IntN(5), role)
	case k < 22 && len(g.ids) > 0:
		first := g.ids[g.r.IntN(len(g.ids))]
		if g.version == 1 {
			body = fmt.Sprintf(`"type":"compaction","summary":"summary %d","firstKeptEntryIndex":%d,"tokensBefore":10`, g.n, 1+g.r.IntN(len(g.lines)+1))
		} else {
			body = fmt.Sprintf(`"type":"compaction","summary":"summary %d","firstKeptEntryId":%q,"tokensBefore":10`, g.n, first)
		}
	case k < 24 && len(g.ids) > 0:
		body = fmt.Sprintf(`"type":"branch_summary","fromId":%q,"summary":"branch %d"`, g.ids[g.r.IntN(len(g.ids))], g.n)
	case k < 25 && len(g.ids) > 0:
		body = fmt.Sprintf(`"type":"label","targetId":%q,"label":"l%d"`, g.ids[g.r.IntN(len(g.ids))], g.n)
	case k < 26:
		body = fmt.Sprintf(`"type":"custom_message","customType":"note","content":"custom %d","display":%v`, g.n, g.r.IntN(2) == 0)
	case k < 27:
		body = `"type":"custom","customType":"state","data":{"k":1}`
	case k < 28:
		body = fmt.Sprintf(`"type":"mode_change","mode":"plan","data":{"n":%d}`, g.n)
	case k < 29:
		body = `"type":"ttsr_injection","injectedRules":["r1"]`
	default:
		body = fmt.Sprintf(`"type":"future_kind","payload":{"n":%d,"x":[1,2.5,"s"]}`, g.n)
	}
	if g.version == 1 {
		return fmt.Sprintf(`{%s,"timestamp":%q}`, body, g.ts())
	}
	id := g.id()
	line := fmt.Sprintf(`{"type":%s,"id":%q,"parentId":%s,"timestamp":%q}`, "", id, g.parent(), g.ts())
	_ = line
	out := fmt.Sprintf(`{%s,"id":%q,"parentId":%s,"timestamp":%q}`, body, id, g.parent(), g.ts())
	g.ids = append(g.ids, id)
	g.leaf = id
	return out
}

// generateTree returns a random session file and whether it is v3.
func generateTree(seed uint64) (string, int) {
	r := rand.New(rand.NewPCG(seed, 0x5e55))
	g := &genTree{r: r, version: []int{1, 2, 3, 3, 3, 3}[r.IntN(6)]}
	header := fmt.Sprintf(`{"type":"session","version":%d,"id":"src-%d","timestamp":"2026-02-16T10:00:00.000Z","cwd":"/w"}`, g.version, seed)
	if g.version == 1 {
		header = fmt.Sprintf(`{"type":"session","id":"src-%d","timestamp":"2026-02-16T10:00:00.000Z","cwd":"/w"}`, seed)
	}
	g.lines = append(g.lines, header)
	for range 1 + r.IntN(40) {
		switch k := r.IntN(60); {
		case k == 0:
			g.lines = append(g.lines, `{"type":"message","id":"broken`) // damaged
		case k == 1:
			g.lines = append(g.lines, "")
		case k == 2:
			g.lines = append(g.lines, `garbage line`)
		default:
			g.lines = append(g.lines, g.entry())
		}
	}
	data := strings.Join(g.lines, "\n") + "\n"
	if r.IntN(8) == 0 {
		data += `{"type":"message","id":"torn","parentId":null,"timestamp":"2026-02-16T10:00:00.000Z","message":{"role":"user","con` // torn tail
	}
	return data, g.version
}

// contextJSON is a context as JSON, for comparing.
func contextJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}
