package etcd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
	"github.com/banyand-io/banyand/pkg/registry/node"
)

// nodeTestTTL keeps expiry tests short; 1 s is etcd's floor.
const nodeTestTTL = time.Second

func nodeTestConfig() NodeConfig {
	return NodeConfig{Namespace: "test", TTL: nodeTestTTL, RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond}
}

func testDataNode(name, addr string) *databasev1.Node {
	return &databasev1.Node{
		Metadata:    &commonv1.Metadata{Name: name},
		Roles:       []databasev1.Role{databasev1.Role_ROLE_DATA},
		GrpcAddress: addr,
	}
}

// nodeLogBuffer collects log output from any goroutine.
type nodeLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *nodeLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *nodeLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func nodeTestLogger(buf *nodeLogBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newNodeTestClient returns a client the test may close itself (to
// simulate a crash); it is closed anyway, before the server stops.
func newNodeTestClient(t *testing.T, srv *etcdtest.Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{srv.Endpoint()},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// nodeRecorder is a node.Handler keeping every update; it fails the test if
// called concurrently.
type nodeRecorder struct {
	t       *testing.T
	busy    atomic.Bool
	mu      sync.Mutex
	updates []node.Update
	w       *NodeWatcher
}

func (r *nodeRecorder) handle(u node.Update) {
	if !r.busy.CompareAndSwap(false, true) {
		r.t.Error("handler called concurrently")
	}
	defer r.busy.Store(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.updates); n > 0 && u.Revision < r.updates[n-1].Revision {
		r.t.Errorf("update revision %d after %d", u.Revision, r.updates[n-1].Revision)
	}
	r.updates = append(r.updates, u)
}

// addr returns the address of the named node in the latest update, "" if
// it is not there.
func (r *nodeRecorder) addr(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.updates) == 0 {
		return ""
	}
	for _, n := range r.updates[len(r.updates)-1].Nodes {
		if n.GetMetadata().GetName() == name {
			return n.GetGrpcAddress()
		}
	}
	return ""
}

func (r *nodeRecorder) synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates) > 0
}

func (r *nodeRecorder) last() node.Update {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates[len(r.updates)-1]
}

// events returns the events about the named node, in order.
func (r *nodeRecorder) events(name string) []node.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []node.Event
	for _, u := range r.updates {
		for _, e := range u.Events {
			if e.Name() == name {
				out = append(out, e)
			}
		}
	}
	return out
}

// startNodeWatch runs a NodeWatcher on cli until the test ends and waits
// for its first update.
func startNodeWatch(t *testing.T, cli *clientv3.Client, log *slog.Logger) *nodeRecorder {
	t.Helper()
	w, err := NewNodeWatcher(nodeTestConfig(), cli, log)
	if err != nil {
		t.Fatal(err)
	}
	r := &nodeRecorder{t: t, w: w}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, r.handle) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch = %v, want context.Canceled", err)
		}
	})
	waitNode(t, 10*time.Second, "watcher's first update", r.synced)
	return r
}

// runRegister runs Register in the background; stop cancels it and returns
// its result (also called when the test ends).
func runRegister(t *testing.T, r *NodeRegistrar, n *databasev1.Node) (stop func() error, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- r.Register(ctx, n) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-ch })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ch
}

func newTestRegistrar(t *testing.T, cli *clientv3.Client, log *slog.Logger) *NodeRegistrar {
	t.Helper()
	r, err := NewNodeRegistrar(nodeTestConfig(), cli, log)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitNode polls cond every 5 ms until it holds; it fails the test after
// limit.
func waitNode(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// getNodeKV reads the node key directly; nil if absent.
func getNodeKV(t *testing.T, cli *clientv3.Client, name string) *clientv3.GetResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, nodeTestConfig().nodeKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
