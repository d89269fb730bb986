package viewer

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/trovekit/trove/catalog"
)

// catalogPages adds the pages the store's catalog answers: full-text
// search, whose hits link to their entry on its session's page, and
// usage stats with charts drawn in inline SVG.
func (v *viewer) catalogPages(mux *http.ServeMux) {
	template.Must(v.tmpl.Funcs(template.FuncMap{"marks": marks}).Parse(catalogTemplates))
	mux.HandleFunc("GET /search", v.search)
	mux.HandleFunc("GET /stats", v.stats)
}

const catalogTemplates = `{{define "search"}}{{template "top" .}}<div class="meta"><a href="/">← sessions</a> · <a href="/stats">stats</a></div><h1>Search</h1>
<form method="get" action="/search"><input type="search" name="q" value="{{.Query}}" size="60" placeholder="words, &quot;a phrase&quot;, prefix*, AND OR NOT"> <button>Search</button></form>
{{if .Error}}<p class="meta">{{.Error}}</p>{{end}}
{{range .Hits}}{{if .RunID}}<div class="hit"><div class="meta">run {{.RunID}}{{if .SessionID}} of <a href="/s/{{.SessionID}}">{{.SessionID}}</a>{{end}} · {{.Cwd}} · {{.Role}}{{range .Tools}} {{.}}{{end}}{{if not .Time.IsZero}} · {{time .Time}}{{end}} · record {{.EntryID}}</div>
<p>{{if .SessionID}}<a class="snippet" href="/s/{{.SessionID}}">{{marks .Snippet}}</a>{{else}}{{marks .Snippet}}{{end}}</p></div>{{else}}<div class="hit"><div class="meta"><a href="/s/{{.SessionID}}">{{or .Title .SessionID}}</a> · {{.Cwd}} · {{.Role}}{{range .Tools}} {{.}}{{end}}{{if not .Time.IsZero}} · {{time .Time}}{{end}}{{if .Branch}} · branch {{.Branch}}{{end}}</div>
<p><a class="snippet" href="/s/{{.SessionID}}{{if .EntryID}}#e-{{.EntryID}}{{end}}">{{marks .Snippet}}</a></p></div>{{end}}
{{else}}{{if .Query}}{{if not .Error}}<p class="meta">No matches.</p>{{end}}{{end}}{{end}}{{template "bottom"}}{{end}}
{{define "stats"}}{{template "top" .}}<div class="meta"><a href="/">← sessions</a> · <a href="/search">search</a></div><h1>Usage</h1>
<p class="meta">{{.Stats.Total.Sessions}} sessions, {{.Stats.Total.Messages}} messages, {{.Stats.Total.Input}} input and {{.Stats.Total.Output}} output tokens ({{.Stats.Total.CacheRead}} cache read, {{.Stats.Total.CacheWrite}} cache write), ${{printf "%.2f" .Stats.Total.Cost}}, {{.Stats.Total.ToolCalls}} tool calls ({{.Stats.Total.ToolErrors}} failed).
Session files {{.Stats.SessionBytes}} bytes; {{.Stats.Blobs}} blobs, {{.Stats.BlobBytes}} bytes stored ({{.Stats.BlobOriginal}} before compression), {{.Stats.DedupSaved}} saved by storing each once.</p>
<h2>Messages by day</h2>{{.DayChart}}
<h2>By model</h2><table><tr><th>model</th><th>sessions</th><th>messages</th><th>input</th><th>output</th><th>cost</th></tr>{{range .Models}}<tr><td>{{.Key}}</td><td>{{.Sessions}}</td><td>{{.Messages}}</td><td>{{.Input}}</td><td>{{.Output}}</td><td>${{printf "%.2f" .Cost}}</td></tr>{{end}}</table>
<h2>Tool calls</h2>{{.ToolChart}}{{template "bottom"}}{{end}}`

// marks renders a snippet with its «matches» as <mark>, escaped.
func marks(s string) template.HTML {
	var b strings.Builder
	for {
		i := strings.Index(s, catalog.MarkOpen)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], catalog.MarkClose)
		if j < 0 {
			break
		}
		b.WriteString(template.HTMLEscapeString(s[:i]))
		b.WriteString("<mark>")
		b.WriteString(template.HTMLEscapeString(s[i+len(catalog.MarkOpen) : i+j]))
		b.WriteString("</mark>")
		s = s[i+j+len(catalog.MarkClose):]
	}
	b.WriteString(template.HTMLEscapeString(s))
	return template.HTML(b.String())
}

func (v *viewer) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := map[string]any{"Title": "trove search", "Query": q}
	if q != "" {
		var hits []catalog.Hit
		for h, err := range v.ts.Search(r.Context(), catalog.Query{Text: q, Limit: 50}) {
			if errors.Is(err, catalog.ErrBadQuery) {
				w.WriteHeader(http.StatusBadRequest)
				data["Error"] = err.Error()
				break
			}
			if err != nil {
				v.fail(w, err)
				return
			}
			hits = append(hits, h)
		}
		data["Hits"] = hits
	}
	v.render(w, "search", data)
}

func (v *viewer) stats(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	days, err := v.ts.Stats(ctx, catalog.StatsQuery{By: catalog.ByDay})
	if err != nil {
		v.fail(w, err)
		return
	}
	models, err := v.ts.Stats(ctx, catalog.StatsQuery{By: catalog.ByModel})
	if err != nil {
		v.fail(w, err)
		return
	}
	tools, err := v.ts.Stats(ctx, catalog.StatsQuery{By: catalog.ByTool})
	if err != nil {
		v.fail(w, err)
		return
	}
	var dayBars, toolBars []bar
	for _, g := range days.Groups {
		dayBars = append(dayBars, bar{g.Key, g.Messages, 0})
	}
	for _, g := range tools.Groups {
		toolBars = append(toolBars, bar{g.Key, g.ToolCalls, g.ToolErrors})
	}
	v.render(w, "stats", map[string]any{"Title": "trove stats", "Stats": days, "Models": models.Groups,
		"DayChart": barChart(dayBars, "messages"), "ToolChart": barChart(toolBars, "calls (failed in red)")})
}

// bar is one bar of a chart: its label, value and the part drawn red.
type bar struct {
	label    string
	value    int64
	redValue int64
}

// barChart draws bars as an inline SVG: no script, no request.
func barChart(bars []bar, unit string) template.HTML {
	if len(bars) == 0 {
		return template.HTML(`<p class="meta">Nothing yet.</p>`)
	}
	peak := int64(1)
	for _, b := range bars {
		peak = max(peak, b.value)
	}
	const width, row = 600, 22
	var s strings.Builder
	fmt.Fprintf(&s, `<svg role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d" style="max-width:100%%">`,
		template.HTMLEscapeString(unit), width+260, row*len(bars)+4, width+260, row*len(bars)+4)
	for i, b := range bars {
		y := i*row + 2
		w := int(float64(width) * float64(b.value) / float64(peak))
		red := int(float64(width) * float64(b.redValue) / float64(peak))
		fmt.Fprintf(&s, `<text x="0" y="%d" font-size="12" fill="currentColor">%s</text>`, y+14, template.HTMLEscapeString(b.label))
		fmt.Fprintf(&s, `<rect x="160" y="%d" width="%d" height="16" fill="#4a7fd4"/>`, y, max(w, 1))
		if red > 0 {
			fmt.Fprintf(&s, `<rect x="160" y="%d" width="%d" height="16" fill="#d44a4a"/>`, y, red)
		}
		fmt.Fprintf(&s, `<text x="%d" y="%d" font-size="12" fill="currentColor">%d</text>`, 166+w, y+14, b.value)
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}
