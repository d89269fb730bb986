package viewer

import (
	"regexp"
	"strings"
	"testing"

	"github.com/trovekit/trove/internal/browsertest"
)

func TestViewerSearch(t *testing.T) {
	srv, id := startViewer(t)
	code, body := get(t, srv.URL+"/search?q=zebra")
	link := regexp.MustCompile(`href="/s/` + id + `#e-([0-9a-f]+)"`).FindStringSubmatch(body)
	if code != 200 || link == nil || !strings.Contains(body, "<mark>ZEBRA</mark>") || strings.Contains(body, "<script") {
		t.Fatalf("search: %d\n%s", code, body)
	}
	// The hit's link lands on its entry.
	if _, page := get(t, srv.URL+"/s/"+id); !strings.Contains(page, `id="e-`+link[1]+`"`) {
		t.Errorf("session page has no entry %s", link[1])
	}
	if code, body := get(t, srv.URL+"/search?q=%22unbalanced"); code != 400 || !strings.Contains(body, "bad search query") {
		t.Errorf("bad query: %d\n%s", code, body)
	}
	if _, body := get(t, srv.URL+"/search?q=nothing-like-this"); !strings.Contains(body, "No matches") {
		t.Errorf("no matches: %s", body)
	}
	code, body = get(t, srv.URL+"/stats")
	if code != 200 || !strings.Contains(body, "<svg") || !strings.Contains(body, "grep") || !strings.Contains(body, "1 sessions") {
		t.Errorf("stats: %d\n%s", code, body)
	}
}

func TestViewerSearchInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	srv, id := startViewer(t)
	dom := browsertest.Load(t, bin, srv.URL+"/search?q=%22main+go%22+OR+zebra", browsertest.Page{Args: []string{"--dump-dom"}})
	links := regexp.MustCompile(`href="(/s/`+id+`#e-[0-9a-f]+)"`).FindAllStringSubmatch(dom, -1)
	if len(links) < 2 || !strings.Contains(dom, "<mark>ZEBRA</mark>") {
		t.Fatalf("results not in the DOM:\n%s", dom)
	}
	for _, u := range regexp.MustCompile(`(?i)https?://[^\s"'<>]+`).FindAllString(dom, -1) {
		if !strings.HasPrefix(u, "http://127.0.0.1") {
			t.Errorf("page references %s", u)
		}
	}
	entry := strings.TrimPrefix(links[0][1], "/s/"+id+"#")
	page := browsertest.Load(t, bin, srv.URL+links[0][1], browsertest.Page{Args: []string{"--dump-dom"}})
	if !strings.Contains(page, `id="`+entry+`"`) {
		t.Errorf("the link's page has no %s", entry)
	}
	stats := browsertest.Load(t, bin, srv.URL+"/stats", browsertest.Page{Args: []string{"--dump-dom"}})
	if !strings.Contains(stats, "<svg") || !strings.Contains(stats, "Messages by day") {
		t.Errorf("stats page:\n%s", stats)
	}
}
