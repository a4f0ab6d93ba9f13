// Package pauseproxy is a TCP proxy for tests that can be paused: it then
// stops copying bytes in both directions without closing anything, so to
// its peers the server behind it is alive and silent — a hung node, not a
// dead one.
package pauseproxy

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards connections on a loopback port to one target address.
type Proxy struct {
	lis    net.Listener
	target string
	done   chan struct{} // closed by Close

	mu     sync.Mutex
	resume chan struct{} // non-nil while paused; closed by Resume
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on 127.0.0.1:0 and forwards to target until Close, which
// also runs when the test ends.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{lis: lis, target: target, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Go(p.accept)
	tb.Cleanup(p.Close)
	return p
}

// Addr is the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.wg.Go(func() { p.pipe(c, up) })
		p.wg.Go(func() { p.pipe(up, c) })
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst, holding what it read while paused; when either
// side fails both are closed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitResumed() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitResumed blocks while paused; false when the proxy closed meanwhile.
func (p *Proxy) waitResumed() bool {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-p.done:
		return false
	}
}

// Pause stops forwarding; connections stay open.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// Resume forwards again, what was held first.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// Close cuts every connection and stops accepting; safe to call twice.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	_ = p.lis.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
