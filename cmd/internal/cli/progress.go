package cli

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// bar is a progress bar on stderr, shown only while stderr is a terminal
// and output is not --json (a script reading stderr gets no escape codes);
// otherwise, and on a nil *bar, every method does nothing.
type bar struct {
	pb *progressbar.ProgressBar
	w  *gateWriter
	on *atomic.Bool
}

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
	w := &gateWriter{w: a.stderr}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
	}
	if total < 0 {
		opts = append(opts, progressbar.OptionSpinnerType(14))
	}
	a.barOn.Store(true)
	return &bar{pb: progressbar.NewOptions(total, opts...), w: w, on: &a.barOn}
}

// set moves the bar to done steps, resizing it to total when that changed.
func (b *bar) set(done, total int) {
	if b == nil {
		return
	}
	if total > 0 && int64(total) != b.pb.GetMax64() {
		b.pb.ChangeMax(total)
	}
	b.pb.Set(done)
}

// add moves the bar n steps on.
func (b *bar) add(n int) {
	if b != nil {
		b.pb.Add(n)
	}
}

// done clears the bar; nothing is written after it returns (a spinner
// redraws from a goroutine of its own).
func (b *bar) done() {
	if b == nil {
		return
	}
	b.pb.Finish()
	b.w.close()
	b.on.Store(false)
}

// gateWriter passes writes on until closed, then drops them.
type gateWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(p), nil
	}
	return g.w.Write(p)
}

func (g *gateWriter) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}
