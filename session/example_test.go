package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

func Example() {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()

	at := time.Date(2026, 2, 16, 10, 20, 30, 0, time.UTC)
	name := session.SessionPath("/work/pi", at, "1f9d2a6b9c0d1234")
	s, err := tree.Create(st, name, tree.Header{ID: "1f9d2a6b9c0d1234", Cwd: "/work/pi"},
		tree.WithClock(func() time.Time { return at }),
		tree.WithRandom(strings.NewReader("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c")))
	if err != nil {
		panic(err)
	}
	s.Append(ctx, &tree.ThinkingLevelChange{ThinkingLevel: "high"})
	s.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"Fix the parser"}`))
	// The file is written at the first assistant message.
	s.AppendMessage(ctx, json.RawMessage(`{"role":"assistant","provider":"anthropic","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done."}]}`))
	if err := s.Close(ctx); err != nil {
		panic(err)
	}

	store, err := session.OpenStore(ctx, st)
	if err != nil {
		panic(err)
	}
	c, err := store.ContextFor(ctx, "1f9d", "")
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(c)
	fmt.Println(name)
	fmt.Println(string(out))
	// Output:
	// sessions/--work-pi--/2026-02-16T10-20-30-000Z_1f9d2a6b9c0d1234.jsonl
	// {"leafId":"090a0b0c","messages":[{"role":"user","content":"Fix the parser"},{"role":"assistant","provider":"anthropic","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done."}],"api":"unknown","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}],"thinkingLevel":"high","models":{"default":"anthropic/claude-sonnet-4-5"},"injectedTtsrRules":[],"mode":"none"}
}

func ExampleOpenStore() {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	at := time.Date(2026, 2, 16, 10, 20, 30, 0, time.UTC)
	store, err := session.OpenStore(ctx, st, session.WithClock(func() time.Time { return at }))
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := store.Create(ctx, session.CreateOptions{ID: "0195f3a1-7c2e-7000-8000-000000000001", Cwd: "/work/app"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Appends are queued; Flush makes them durable, Close writes the rest.
	_ = h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"fix the test","timestamp":1}`))
	_ = h.AppendMessage(ctx, json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"Fixed."}],"timestamp":2}`))
	if err := h.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for m, err := range store.List(ctx, "/work/app") {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(m.ID, m.MessageCount, m.FirstMessage)
	}
	// Any unique prefix of an id names the session.
	msgs, err := store.LoadMessages(ctx, "0195")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range msgs {
		fmt.Println(e.Role(), tree.MessageText(e.Field("message")))
	}
	// Output:
	// 0195f3a1-7c2e-7000-8000-000000000001 2 fix the test
	// user fix the test
	// assistant Fixed.
}
