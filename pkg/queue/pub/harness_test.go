package pub_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/banyand-io/banyand/internal/pauseproxy"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/queue/sub"
	"github.com/banyand-io/banyand/pkg/route"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	group    = "g"
	shardNum = 8
	waitMax  = 20 * time.Second // bounds every poll: never fires on a healthy run
)

// testNode is a real subscriber on 127.0.0.1:0, optionally behind a proxy.
type testNode struct {
	name     string
	srv      *sub.Server
	addr     string            // what the placement table advertises
	proxy    *pauseproxy.Proxy // nil unless behindProxy
	served   chan error
	stopOnce sync.Once
}

func startNode(t testing.TB, name string, behindProxy bool, topics map[queue.Topic]queue.Listener) *testNode {
	t.Helper()
	srv := sub.New(sub.Config{NodeName: name}, nil)
	for topic, l := range topics {
		if err := srv.Subscribe(topic, l); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{name: name, srv: srv, addr: lis.Addr().String(), served: make(chan error, 1)}
	go func() { n.served <- srv.Serve(lis) }()
	if behindProxy {
		n.proxy = pauseproxy.Start(t, n.addr)
		n.addr = n.proxy.Addr()
	}
	t.Cleanup(func() { n.stop(t, time.Second) })
	return n
}

// stop stops the server; a zero grace makes it abrupt (connections cut,
// listeners' contexts cancelled).
func (n *testNode) stop(t testing.TB, grace time.Duration) {
	n.stopOnce.Do(func() {
		if n.proxy != nil {
			n.proxy.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = n.srv.Stop(ctx)
		select {
		case <-n.served:
		case <-time.After(waitMax):
			t.Errorf("node %s: Serve did not return after Stop", n.name)
		}
	})
}

func (n *testNode) routeNode() route.Node { return route.Node{Name: n.name, Addr: n.addr} }

func newRouter(t testing.TB, nodes ...*testNode) *route.Router {
	t.Helper()
	r := route.NewRouter()
	setNodes(t, r, nodes...)
	return r
}

func setNodes(t testing.TB, r *route.Router, nodes ...*testNode) {
	t.Helper()
	rn := make([]route.Node, len(nodes))
	for i, n := range nodes {
		rn[i] = n.routeNode()
	}
	if _, err := r.Update(rn, []route.Group{{Name: group, ShardNum: shardNum}}); err != nil {
		t.Fatal(err)
	}
}

// fastConfig shortens every timer so fault tests finish quickly.
func fastConfig() pub.Config {
	return pub.Config{
		NodeName:         "liaison-test",
		RetryBudget:      200 * time.Millisecond,
		StallTimeout:     200 * time.Millisecond,
		HandshakeTimeout: 300 * time.Millisecond,
		TickInterval:     5 * time.Millisecond,
		MaxBackoff:       100 * time.Millisecond,
	}
}

func newClient(t testing.TB, cfg pub.Config, p pub.Placement) *pub.Client {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Logs go to the test log: quiet on success, there on failure.
	c := pub.New(cfg, pub.Deps{Placement: p, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// recorder is a listener that records the payloads it persisted, and can
// be held (blocked) to play a slow or stuck data node.
type recorder struct {
	mu    sync.Mutex
	seen  map[string]int
	calls int
	gate  chan struct{} // nil: never blocks
}

func newRecorder(held bool) *recorder {
	r := &recorder{seen: map[string]int{}}
	if held {
		r.gate = make(chan struct{})
	}
	return r
}

func (r *recorder) Handle(ctx context.Context, b queue.Batch) queue.Result {
	r.mu.Lock()
	r.calls++
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return queue.Result{Errs: fill(len(b.Messages), ctx.Err())}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range b.Messages {
		r.seen[string(m)]++
	}
	return queue.Result{}
}

func fill(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func (r *recorder) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate != nil {
		close(r.gate)
		r.gate = nil
	}
}

func (r *recorder) has(payload string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[payload] > 0
}

func (r *recorder) count() (distinct, calls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen), r.calls
}
