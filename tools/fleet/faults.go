package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Faults an HTTP proxy between the machines and the engine injects.
const (
	FaultResetBefore = "reset"       // the connection drops before the request reaches the engine
	FaultResetAfter  = "reset-after" // it reaches the engine; the answer is lost
	Fault500         = "500"         // InternalError, not forwarded
	Fault500After    = "500-after"   // forwarded, then InternalError instead of the answer
	FaultSlowDown    = "slowdown"    // 503 SlowDown, not forwarded
	FaultLatency     = "latency"     // forwarded after 10-400 ms
	FaultStall       = "stall"       // held past the client's deadline, then dropped
	FaultPartition   = "partition"   // the machine is cut off: every request dropped or held
	faultNone        = ""
)

// Proxy is a fault-injecting HTTP proxy to an engine, one listener per
// machine on 127.0.0.1, so that one machine can be cut off alone.
type Proxy struct {
	target  *url.URL
	stall   time.Duration
	rate    float64
	mu      sync.Mutex
	rng     *rand.Rand
	counts  map[string]int
	cut     atomic.Int64 // the partitioned machine + 1; 0 for none
	servers []*http.Server
	addrs   []string
	wg      sync.WaitGroup
}

// StartProxy starts a proxy to endpoint with one listener per machine.
// rate is the share of requests that meet a fault (latency aside, which
// one in 20 of the rest meet: a GC reads every root, 16 at a time, so
// latency on a fifth of them made each GC run minutes long); stall is how
// long a stalled request is held (past the machines' request deadline).
func StartProxy(endpoint string, machines int, rate float64, stall time.Duration, seed uint64) (*Proxy, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: u, stall: stall, rate: rate, rng: rand.New(rand.NewPCG(seed, 0xfa17)), counts: map[string]int{}}
	for id := range machines {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			return nil, err
		}
		srv := &http.Server{Handler: p.handler(id), ReadHeaderTimeout: 10 * time.Second}
		p.servers = append(p.servers, srv)
		p.addrs = append(p.addrs, l.Addr().String())
		p.wg.Go(func() { srv.Serve(l) })
	}
	return p, nil
}

// Endpoint is the URL machine id dials.
func (p *Proxy) Endpoint(id int) string { return "http://" + p.addrs[id] }

// Partition cuts machine id off from the engine; Heal ends it.
func (p *Proxy) Partition(id int) { p.cut.Store(int64(id) + 1) }

// Heal ends a partition.
func (p *Proxy) Heal() { p.cut.Store(0) }

// Counts is how many requests met each fault.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Close stops every listener and waits for them.
func (p *Proxy) Close() {
	for _, s := range p.servers {
		s.Close()
	}
	p.wg.Wait()
}

func (p *Proxy) pick(id int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := faultNone
	switch {
	case p.cut.Load() == int64(id)+1:
		f = FaultPartition
	case p.rng.Float64() < p.rate:
		f = []string{FaultResetBefore, FaultResetAfter, Fault500, Fault500After, FaultSlowDown, FaultSlowDown, FaultStall}[p.rng.IntN(7)]
	case p.rng.IntN(20) == 0:
		f = FaultLatency
	}
	p.counts[f]++
	return f
}

func (p *Proxy) jitter(max time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Duration(p.rng.Int64N(int64(max)))
}

func (p *Proxy) handler(id int) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(p.target)
	rp.ErrorLog = nil
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p.pick(id) {
		case FaultPartition, FaultStall:
			// Held as a dead link would hold it, until the client gives
			// up (its deadline) or p.stall ran out, then dropped.
			t := time.NewTimer(p.stall)
			defer t.Stop()
			select {
			case <-r.Context().Done():
			case <-t.C:
			}
			drop(w)
		case FaultResetBefore:
			drop(w)
		case Fault500:
			s3Error(w, http.StatusInternalServerError, "InternalError", "injected")
		case FaultSlowDown:
			s3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		case FaultResetAfter:
			rp.ServeHTTP(httptest.NewRecorder(), r)
			drop(w)
		case Fault500After:
			rp.ServeHTTP(httptest.NewRecorder(), r)
			s3Error(w, http.StatusInternalServerError, "InternalError", "injected after the request was served")
		case FaultLatency:
			time.Sleep(10*time.Millisecond + p.jitter(390*time.Millisecond))
			rp.ServeHTTP(w, r)
		default:
			rp.ServeHTTP(w, r)
		}
	})
}

// drop closes the client's connection without an answer.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // a reset, not a clean close
	}
	conn.Close()
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
	io.Copy(w, &b)
}
