package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// logWriter writes log lines to stderr, clearing a progress bar's line
// first (the bar draws itself again on its next step).
type logWriter struct{ a *app }

func (l logWriter) Write(p []byte) (int, error) {
	if l.a.barOn.Load() {
		io.WriteString(l.a.stderr, "\r\x1b[K")
	}
	return l.a.stderr.Write(p)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress starts a bar of total steps (-1: unknown, a spinner with a
// count and the time taken).
func (a *app) progress(total int, desc string) *bar {
	terminal := a.terminal
	if terminal == nil {
		terminal = isTerminal
	}
	if a.jsonOut || !terminal(a.stderr) {
		return nil
	}
	a.barOn.Store(true)
	now := time.Now()
	b := &bar{w: a.stderr, on: &a.barOn, desc: desc, total: total, start: now}
	if f, ok := a.stderr.(*os.File); ok {
		b.cols, _, _ = term.GetSize(int(f.Fd()))
	}
	b.mu.Lock()
	b.draw(now)
	b.mu.Unlock()
	if total < 0 {
		b.stop, b.stopped = make(chan struct{}), make(chan struct{})
		go b.spin()
	}
	return b
}

// bar is a progress bar on stderr, shown only while stderr is a terminal
// and output is not --json (a script reading stderr gets no escape codes);
// otherwise, and on a nil *bar, every method does nothing. These few
// lines replace schollz/progressbar, whose package initialisation, with
// its dependencies', every process paid at start.
type bar struct {
	w     io.Writer
	on    *atomic.Bool
	desc  string
	cols  int // the terminal's width, 0 if unknown
	start time.Time
	// stop ends a spinner's goroutine, which closes stopped.
	stop, stopped chan struct{}

	mu       sync.Mutex // the fields below: steps may come from goroutines
	total    int        // < 0: unknown, a spinner
	n        int
	frame    int
	drawn    time.Time
	finished bool
}

// barEvery is the least time between two redraws, and a spinner's period.
const barEvery = 100 * time.Millisecond

// barWidth is how many cells a bar of known length has.
const barWidth = 30

var spinFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// set moves the bar to done steps, resizing it to total when that changed
// (total <= 0 keeps its length).
func (b *bar) set(done, total int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if total > 0 {
		b.total = total
	}
	b.n = done
	b.maybeDraw()
}

// add moves the bar n steps on.
func (b *bar) add(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += n
	b.maybeDraw()
}

// done clears the bar; nothing is written after it returns.
func (b *bar) done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.finished {
		b.mu.Unlock()
		return
	}
	b.finished = true // draw writes nothing from now on
	io.WriteString(b.w, "\r\x1b[K")
	b.on.Store(false)
	b.mu.Unlock()
	if b.stop != nil {
		close(b.stop)
		<-b.stopped
	}
}

// spin redraws a spinner every barEvery until stop is closed.
func (b *bar) spin() {
	defer close(b.stopped)
	t := time.NewTicker(barEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			b.mu.Lock()
			b.frame++
			b.draw(now)
			b.mu.Unlock()
		}
	}
}

// maybeDraw redraws the bar unless it was drawn less than barEvery ago;
// b.mu is held.
func (b *bar) maybeDraw() {
	if now := time.Now(); now.Sub(b.drawn) >= barEvery {
		b.draw(now)
	}
}

// draw writes the bar over the line it is on; b.mu is held.
func (b *bar) draw(now time.Time) {
	if b.finished {
		return
	}
	b.drawn = now
	took := now.Sub(b.start).Truncate(time.Second)
	var tail string
	if b.total < 0 {
		tail = fmt.Sprintf(" %s (%d) [%s]", spinFrames[b.frame%len(spinFrames)], b.n, took)
	} else {
		pct, cells := 100, barWidth
		if b.total > 0 {
			n := min(max(b.n, 0), b.total)
			pct, cells = n*100/b.total, n*barWidth/b.total
		}
		tail = fmt.Sprintf(" %3d%% |%s%s| (%d/%d) [%s]", pct,
			strings.Repeat("█", cells), strings.Repeat(" ", barWidth-cells), b.n, b.total, took)
	}
	io.WriteString(b.w, "\r\x1b[K"+fitLine(b.desc, utf8.RuneCountInString(tail), b.cols)+tail)
}

// fitLine shortens desc from its start ("…" and its end, where a path's
// name is) so that it and tail cells more fit on one line of cols cells
// (0: any width): a line that wrapped could not be drawn over.
func fitLine(desc string, tail, cols int) string {
	room := cols - 1 - tail
	n := utf8.RuneCountInString(desc)
	if cols <= 0 || n <= room {
		return desc
	}
	if room < 2 {
		return ""
	}
	r := []rune(desc)
	return "…" + string(r[n-room+1:])
}
