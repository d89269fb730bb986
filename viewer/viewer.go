package viewer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/export"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// viewer serves read-only pages; every page makes no request outside the
// viewer (the same Content-Security-Policy as exports, plus same-origin
// links).
type viewer struct {
	ts   *troveapi.Store
	log  *slog.Logger
	tmpl *template.Template
}

// New returns the viewer of ts, without any guard: serve it behind Guard.
func New(ts *troveapi.Store, log *slog.Logger) http.Handler {
	v := &viewer{ts: ts, log: log, tmpl: viewTemplates()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", v.list)
	mux.HandleFunc("GET /s/{id}", v.session)
	mux.HandleFunc("GET /s/{id}/checkpoints", v.checkpoints)
	mux.HandleFunc("GET /s/{id}/runs", v.runs)
	v.catalogPages(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only viewer", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		mux.ServeHTTP(w, r)
	})
}

func (v *viewer) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var ae *session.AmbiguousError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = http.StatusNotFound
	case errors.As(err, &ae), errors.Is(err, tree.ErrInvalid):
		code = http.StatusBadRequest
	}
	v.log.Debug("viewer", "err", err)
	http.Error(w, err.Error(), code)
}

// viewTemplates parses the viewer's pages, when a viewer is made: at start
// every run of trove would pay for it.
func viewTemplates() *template.Template {
	return template.Must(template.New("v").Funcs(template.FuncMap{
		"css":  func() template.CSS { return template.CSS(export.CSS()) },
		"time": func(t time.Time) string { return t.Local().Format(time.DateTime) },
	}).Parse(`{{define "top"}}<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">
<title>{{.Title}}</title><style>{{css}}</style></head><body><main>{{end}}
{{define "bottom"}}</main></body></html>{{end}}
{{define "list"}}{{template "top" .}}<h1>Sessions</h1><div class="meta"><a href="/search">full-text search</a> · <a href="/stats">stats</a></div>
<form method="get" action="/"><input type="search" name="q" value="{{.Query}}" placeholder="search titles and first messages"> <button>Search</button></form>
{{range .Groups}}<h2>{{.Cwd}}</h2><table>{{range .Sessions}}<tr><td><a href="/s/{{.ID}}">{{if .Title}}{{.Title}}{{else}}{{.ID}}{{end}}</a></td><td>{{.FirstMessage}}</td><td>{{.MessageCount}} messages</td><td>{{time .UpdatedAt}}</td></tr>{{end}}</table>
{{else}}<p class="meta">No sessions{{if .Query}} match {{.Query}}{{end}}.</p>{{end}}{{template "bottom"}}{{end}}
{{define "checkpoints"}}{{template "top" .}}<div class="meta"><a href="/s/{{.ID}}">← session</a></div><h1>Checkpoints of {{.ID}}</h1>
{{range .Manifests}}<h2>{{.ID}} · {{.Kind}} · {{time .CreatedAt}}</h2>{{if .Note}}<div class="meta">before {{.Note}}{{if .Message}} ({{.Message}}){{end}}</div>{{else if .Message}}<div class="meta">before message <a href="/s/{{$.ID}}#e-{{.Message}}">#{{.Message}}</a></div>{{end}}
{{if .Prev}}<h3>Changes since {{.Prev}}</h3>{{range .Changes}}<details><summary>{{.Status}} <code>{{.Path}}</code></summary>{{if .Note}}<div class="meta">{{.Note}}</div>{{else}}<pre class="diff">{{range .Lines}}<span class="d{{if eq .Op "+"}}add{{else if eq .Op "-"}}del{{end}}">{{.Op}}{{.Text}}</span>
{{end}}</pre>{{end}}</details>{{else}}<div class="meta">no changes</div>{{end}}{{end}}
<details><summary>{{len .Files}} files</summary><table><tr><th>path</th><th>state</th><th>size</th><th>digest</th></tr>{{range .Files}}<tr><td>{{.Path}}</td><td>{{if .Exists}}{{or .Type "file"}}{{else}}absent{{end}}</td><td>{{.Size}}</td><td><code>{{.Digest}}</code></td></tr>{{end}}</table></details>
{{else}}<p class="meta">No checkpoints.</p>{{end}}{{template "bottom"}}{{end}}
{{define "runs"}}{{template "top" .}}<div class="meta"><a href="/s/{{.ID}}">← session</a></div><h1>Runs of {{.ID}}</h1>
<table><tr><th>run</th><th>status</th><th>model</th><th>started</th><th>ms</th><th>input</th><th>final</th></tr>{{range .Runs}}<tr><td>{{.RunID}}</td><td>{{.Status}}</td><td>{{.Model}}</td><td>{{.StartedAt}}</td><td>{{.DurationMS}}</td><td>{{.Input}}</td><td>{{.Final}}</td></tr>{{else}}<tr><td colspan="7" class="meta">No runs.</td></tr>{{end}}</table>{{template "bottom"}}{{end}}`))
}

type cwdGroup struct {
	Cwd      string
	Sessions []session.Metadata
}

func (v *viewer) list(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	lq := strings.ToLower(q)
	var groups []*cwdGroup
	byCwd := map[string]*cwdGroup{}
	// List is most recent first, so groups come in order of their latest.
	for m, err := range v.ts.Sessions().List(r.Context(), "") {
		if err != nil {
			v.fail(w, err)
			return
		}
		if lq != "" && !strings.Contains(strings.ToLower(m.Title+"\n"+m.FirstMessage+"\n"+m.ID+"\n"+m.Cwd), lq) {
			continue
		}
		g := byCwd[m.Cwd]
		if g == nil {
			g = &cwdGroup{Cwd: m.Cwd}
			byCwd[m.Cwd] = g
			groups = append(groups, g)
		}
		g.Sessions = append(g.Sessions, m)
	}
	v.render(w, "list", map[string]any{"Title": "trove sessions", "Query": q, "Groups": groups})
}

func (v *viewer) session(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess, meta, err := v.ts.ReadSession(r.Context(), id)
	if err != nil {
		v.fail(w, err)
		return
	}
	links := []export.Link{
		{Text: "checkpoints", Href: "/s/" + meta.ID + "/checkpoints"},
		{Text: "runs", Href: "/s/" + meta.ID + "/runs"},
	}
	links = append(links, v.lineage(r.Context(), meta)...)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	err = export.HTML(r.Context(), w, sess, export.InViewer(links...))
	if err != nil {
		v.log.Warn("viewer: render session", "id", id, "err", err)
	}
}

// lineage links a session to the one it was forked or spawned from (when
// that is in the store) and to those forked or spawned from it (forks,
// imported subagents).
func (v *viewer) lineage(ctx context.Context, meta session.Metadata) []export.Link {
	var links []export.Link
	if meta.ParentID != "" {
		if p, err := v.ts.Sessions().Metadata(ctx, meta.ParentID); err == nil && p.ID == meta.ParentID {
			links = append(links, export.Link{Text: "parent: " + cmp.Or(p.Title, p.FirstMessage, p.ID), Href: "/s/" + p.ID})
		}
	}
	for m, err := range v.ts.Sessions().List(ctx, "") {
		if err != nil {
			break
		}
		if m.ParentID == meta.ID {
			links = append(links, export.Link{Text: "child: " + cmp.Or(m.Title, m.FirstMessage, m.ID), Href: "/s/" + m.ID})
		}
	}
	return links
}

func (v *viewer) checkpoints(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	meta, err := v.ts.Sessions().Metadata(ctx, r.PathValue("id"))
	if err != nil {
		v.fail(w, err)
		return
	}
	dir := session.SidecarDir(meta.Path) + "/"
	workspaces := hookWorkspaces(meta.Cwd)
	var mans []*checkpoint.Manifest
	for name, err := range checkpoint.Manifests(ctx, v.ts.Storage()) {
		if err != nil {
			v.fail(w, err)
			return
		}
		if !strings.HasPrefix(name, dir) {
			// A hook's, before a tool call of the session: kept with
			// the workspace's own, linked to the session.
			if !workspaces[path.Dir(name)] {
				continue
			}
			h, err := checkpoint.LoadManifestHeader(ctx, v.ts.Storage(), v.ts.Blobs(), name)
			if err != nil || h.Session != meta.ID {
				continue
			}
		}
		m, err := checkpoint.LoadManifest(ctx, v.ts.Storage(), v.ts.Blobs(), name)
		if err != nil {
			v.fail(w, fmt.Errorf("checkpoint %s: %w", name, err))
			return
		}
		mans = append(mans, m)
	}
	slices.SortStableFunc(mans, func(a, b *checkpoint.Manifest) int { return a.CreatedAt.Compare(b.CreatedAt) })
	views := make([]checkpointView, len(mans))
	for i, m := range mans {
		views[i].Manifest = m
		if i > 0 {
			views[i].Prev = mans[i-1].ID
			views[i].Changes = changesBetween(ctx, v.ts.Blobs(), mans[i-1], m)
		}
	}
	v.render(w, "checkpoints", map[string]any{"Title": "checkpoints " + meta.ID, "ID": meta.ID, "Manifests": views})
}

// hookWorkspaces are the store directories of the checkpoints of cwd's
// workspace and of those above it (a hook checkpoints the project's root,
// CLAUDE_PROJECT_DIR, which the session's cwd may lie under).
func hookWorkspaces(cwd string) map[string]bool {
	out := map[string]bool{}
	if !filepath.IsAbs(cwd) {
		return out
	}
	for d := filepath.Clean(cwd); ; d = filepath.Dir(d) {
		out["checkpoints/"+checkpoint.WorkspaceKey(d)] = true
		if d == filepath.Dir(d) {
			return out
		}
	}
}

func (v *viewer) runs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	meta, err := v.ts.Sessions().Metadata(ctx, r.PathValue("id"))
	if err != nil {
		v.fail(w, err)
		return
	}
	var runs []runlog.Summary
	for s, err := range v.ts.Runs().Summaries(ctx, runlog.ForSession(meta.ID)) {
		if err != nil {
			v.fail(w, err)
			return
		}
		runs = append(runs, s)
	}
	v.render(w, "runs", map[string]any{"Title": "runs " + meta.ID, "ID": meta.ID, "Runs": runs})
}

func (v *viewer) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := v.tmpl.ExecuteTemplate(w, name, data); err != nil {
		v.log.Warn("viewer: render", "page", name, "err", err)
	}
}
