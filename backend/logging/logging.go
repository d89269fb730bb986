package logging

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/intercept"
)

// New returns s with every call logged on l, written on intercept.New: op,
// name (and Rename's target), bytes or entries, duration and error. Calls
// log at debug level; failures other than the end of a stream and a
// missing name at warn level.
func New(s backend.Storage, l *slog.Logger) *intercept.Store {
	return intercept.New(s, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		start := time.Now()
		err := next(ctx)
		level := slog.LevelDebug
		if err != nil && err != io.EOF && !errors.Is(err, fs.ErrNotExist) {
			level = slog.LevelWarn
		}
		if !l.Enabled(ctx, level) {
			return err
		}
		attrs := []slog.Attr{slog.String("op", c.Op), slog.String("name", c.Name)}
		if c.To != "" {
			attrs = append(attrs, slog.String("to", c.To))
		}
		if c.N != 0 {
			attrs = append(attrs, slog.Int64("n", c.N))
		}
		attrs = append(attrs, slog.Duration("took", time.Since(start)))
		if err != nil {
			attrs = append(attrs, slog.Any("err", err))
		}
		l.LogAttrs(ctx, level, "trove/backend", attrs...)
		return err
	})
}
