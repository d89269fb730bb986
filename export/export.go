package export

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"

	"github.com/trovekit/trove/session/tree"
)

//go:embed page.css
var css string

//go:embed page.tmpl
var pageTmpl string

// pageTemplates holds the page templates; the viewer (trove serve) renders
// sessions through HTML too, so a session looks the same there and in a
// file. Parsed at first use: parsing costs milliseconds that every run of
// the trove command would pay at start otherwise.
var pageTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"css": func() template.CSS { return template.CSS(css) },
	}).Parse(pageTmpl))
})

// Option tunes an export.
type Option func(*config)

type config struct {
	viewer bool
	links  []Link
}

// Link is a navigation link shown under the title in the viewer.
type Link struct {
	Text, Href string
}

// InViewer renders the page for the local viewer: a link back to the
// session list and the given links (checkpoints, runs).
func InViewer(links ...Link) Option {
	return func(c *config) { c.viewer, c.links = true, links }
}

// CSS is the stylesheet of exported pages, for the viewer's other pages.
func CSS() string { return css }

// HTML writes sess as one self-contained HTML page: the conversation on the
// current branch, every other branch, and the branch tree as a sidebar of
// anchors. The page makes no network request (a Content-Security-Policy
// forbids any) and follows the reader's light or dark preference.
func HTML(ctx context.Context, w io.Writer, sess *tree.Session, opts ...Option) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	p := build(sess)
	p.Embedded = c.viewer
	p.Links = c.links
	bw := bufio.NewWriter(w)
	if err := pageTemplates().ExecuteTemplate(bw, "export", p); err != nil {
		return fmt.Errorf("export html: %w", err)
	}
	return bw.Flush()
}

// Markdown writes the conversation on the current branch as Markdown for
// pasting into an issue: thinking and long outputs folded, images described
// rather than inlined.
func Markdown(ctx context.Context, w io.Writer, sess *tree.Session, _ ...Option) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := build(sess)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s\n\n", mdLine(p.Title))
	fmt.Fprintf(bw, "Session `%s` · %s · %s\n", mdLine(p.ID), mdLine(p.Cwd), mdLine(p.Created))
	if len(p.Branches) > 0 {
		fmt.Fprintf(bw, "\nCurrent branch shown; the session has %d other branch(es).\n", len(p.Branches))
	}
	for _, it := range p.Path {
		fmt.Fprintf(bw, "\n### %s", mdLine(it.Title))
		if it.Label != "" {
			fmt.Fprintf(bw, " [%s]", mdLine(it.Label))
		}
		bw.WriteString("\n\n")
		for _, b := range it.Blocks {
			switch b.Kind {
			case "text":
				bw.WriteString(strings.TrimRight(b.Text, "\n") + "\n\n")
			case "thinking":
				fmt.Fprintf(bw, "<details><summary>%s</summary>\n\n%s\n</details>\n\n", b.Name, fence(b.Text, ""))
			case "toolCall":
				fmt.Fprintf(bw, "Tool call `%s`:\n\n%s\n", mdLine(b.Name), fence(b.Args, "json"))
			case "toolOutput":
				if b.Long {
					fmt.Fprintf(bw, "<details><summary>output (%d bytes)</summary>\n\n%s\n</details>\n\n", len(b.Text), fence(b.Text, ""))
				} else {
					bw.WriteString(fence(b.Text, "") + "\n")
				}
			case "image":
				fmt.Fprintf(bw, "*[image %s, %d bytes]*\n\n", mdLine(b.Mime), b.Size)
			default:
				fmt.Fprintf(bw, "*%s*\n\n", mdLine(b.Text))
			}
		}
	}
	return bw.Flush()
}

// fence wraps s in a code fence longer than any backtick run inside it.
func fence(s, lang string) string {
	n, run := 3, 0
	for _, r := range s {
		if r == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f + "\n"
}

// mdLine keeps a heading or inline value on one line.
func mdLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// JSONL writes the session file with every blob ref resolved: the header,
// then each entry as loaded, for readers without a blob store.
func JSONL(ctx context.Context, w io.Writer, sess *tree.Session, _ ...Option) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h := sess.Header()
	hdr := struct {
		Type          string  `json:"type"`
		Version       float64 `json:"version"`
		ID            string  `json:"id"`
		Timestamp     string  `json:"timestamp"`
		Cwd           string  `json:"cwd"`
		Title         string  `json:"title,omitempty"`
		ParentSession string  `json:"parentSession,omitempty"`
	}{tree.TypeSession, h.Version, h.ID, h.Timestamp, h.Cwd, h.Title, h.ParentSession}
	line, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("export jsonl: %w", err)
	}
	bw := bufio.NewWriter(w)
	bw.Write(line)
	bw.WriteByte('\n')
	for _, e := range sess.Entries() {
		if err := ctx.Err(); err != nil {
			return err
		}
		bw.Write(e.JSON())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
