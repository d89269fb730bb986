//go:build !linux

package cli

import "io"

// growPipe is Linux's alone (F_SETPIPE_SZ).
func growPipe(io.Writer, int) {}
