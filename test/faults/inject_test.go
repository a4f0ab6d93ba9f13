//go:build faults

package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// proxy is a TCP proxy in front of one upstream address. Paused, it stops
// copying in both directions without closing anything: to its peers the
// node behind it is alive and silent.
type proxy struct {
	lis      net.Listener
	upstream string

	mu     sync.Mutex
	resume chan struct{} // non-nil while paused; closed by unpause
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, upstream: upstream}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

func (p *proxy) accept() {
	for {
		down, err := p.lis.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = down.Close()
			_ = up.Close()
			return
		}
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		p.wg.Go(func() { p.copy(up, down) })
		p.wg.Go(func() { p.copy(down, up) })
	}
}

// copy moves bytes from src to dst, holding them while paused; when either
// side fails both are closed.
func (p *proxy) copy(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		p.wait()
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks while the proxy is paused.
func (p *proxy) wait() {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (p *proxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

func (p *proxy) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

func (p *proxy) close() {
	_ = p.lis.Close()
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	p.unpause()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

// registeredNodes returns the data nodes registered in etcd (banyand's
// default namespace): name -> the key's create revision, which changes
// when a node registers anew.
func registeredNodes(ctx context.Context, endpoint string) (map[string]int64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	const prefix = "banyand/nodes/"
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	nodes := map[string]int64{}
	for _, kv := range resp.Kvs {
		nodes[strings.TrimPrefix(string(kv.Key), prefix)] = kv.CreateRevision
	}
	return nodes, nil
}

// waitRegistered polls etcd until every name in want is registered and
// returns the registrations.
func waitRegistered(t *testing.T, endpoint string, limit time.Duration, want ...string) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := registeredNodes(ctx, endpoint)
		cancel()
		missing := 0
		for _, w := range want {
			if _, ok := got[w]; !ok {
				missing++
			}
		}
		if err == nil && missing == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("data nodes %v not all registered in etcd within %s: registered %v, err %v", want, limit, got, err)
		}
		time.Sleep(pollInterval)
	}
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

// scrapeMetrics returns the samples of a Prometheus text page whose name
// starts with prefix, keyed by the sample's name and labels as written.
func scrapeMetrics(ctx context.Context, addr, prefix string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, nil
}

// failedBetween counts messages answered with an error status in [from, to).
func failedBetween(outs []outcome, from, to time.Time) int {
	n := 0
	for _, o := range outs {
		if o.answered && o.status != statusOK && !o.answeredAt.Before(from) && o.answeredAt.Before(to) {
			n++
		}
	}
	return n
}

// ackLatencies returns the answer latencies of the messages sent in
// [from, to) and acknowledged, sorted.
func ackLatencies(outs []outcome, from, to time.Time) []time.Duration {
	var ds []time.Duration
	for _, o := range outs {
		if o.sent && o.answered && o.status == statusOK && !o.sentAt.Before(from) && o.sentAt.Before(to) {
			ds = append(ds, o.answeredAt.Sub(o.sentAt))
		}
	}
	slices.Sort(ds)
	return ds
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}
