//go:build !linux

package main

import "io"

// growPipe is Linux's alone (F_SETPIPE_SZ).
func growPipe(io.Writer, int) {}
