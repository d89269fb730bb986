package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/session"
)

func main() {
	ctx := context.Background()
	d, _ := os.MkdirTemp("", "fl")
	defer os.RemoveAll(d)
	st, _ := fs.NewOS(d)
	s, _ := session.OpenStore(ctx, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/work/bench"})
	if err != nil {
		panic(err)
	}
	msg := func(i int) json.RawMessage {
		if i%2 == 0 {
			return json.RawMessage(fmt.Sprintf(`{"role":"user","content":"step %d","timestamp":1}`, i))
		}
		return json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}`)
	}
	for i := 0; i < 64; i++ {
		h.AppendMessage(ctx, msg(i))
	}
	h.Flush(ctx)
	fmt.Fprintln(os.Stderr, "MARK")
	os.Stat("/MARK-START")
	t := time.Now()
	for i := 64; i < 1024; i++ {
		if err := h.AppendMessage(ctx, msg(i)); err != nil {
			panic(err)
		}
		if (i+1)%64 == 0 {
			if err := h.Flush(ctx); err != nil {
				panic(err)
			}
		}
	}
	os.Stat("/MARK-END")
	fmt.Println(time.Since(t) / 15)
	h.Close(ctx)
}
