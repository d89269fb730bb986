package cli

import (
	"net"
	"strings"
	"testing"
)

// --timeout reaches the store: an S3 endpoint that accepts and never
// answers fails the command, saying it timed out.
func TestTimeoutFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	store := "s3://b?endpoint=http://" + ln.Addr().String() + "&region=us-east-1&use_path_style=true&anonymous=true"
	code, _, errOut := trove(t, "", "--store", store, "--timeout", "200ms", "files", "ls")
	if code != exitFailure || !strings.Contains(errOut, "timed out") {
		t.Fatalf("exit %d: %s; want a timeout", code, errOut)
	}
}

// memblob:// is a store the command opens.
func TestDemoOnMemblob(t *testing.T) {
	demoOnTemp(t, "memblob://")
}
