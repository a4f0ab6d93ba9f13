package node

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/internal/poll"
)

// recorder is a Handler that keeps every update and fails the test if it is
// ever called concurrently.
type recorder struct {
	t       *testing.T
	busy    atomic.Bool
	mu      sync.Mutex
	updates []Update
}

func (r *recorder) handle(u Update) {
	if !r.busy.CompareAndSwap(false, true) {
		r.t.Error("handler called concurrently")
	}
	defer r.busy.Store(false)
	r.mu.Lock()
	r.updates = append(r.updates, u)
	r.mu.Unlock()
}

// last returns the latest update, and whether there was one.
func (r *recorder) last() (Update, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.updates) == 0 {
		return Update{}, false
	}
	return r.updates[len(r.updates)-1], true
}

func (r *recorder) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, u := range r.updates {
		out = append(out, u.Events...)
	}
	return out
}

func addrs(u Update) map[string]string {
	out := map[string]string{}
	for _, n := range u.Nodes {
		out[n.GetMetadata().GetName()] = n.GetGrpcAddress()
	}
	return out
}

// startWatch runs l.Watch until the test ends.
func startWatch(t *testing.T, l *Local) *recorder {
	r := &recorder{t: t}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Watch(ctx, r.handle) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch = %v, want context.Canceled", err)
		}
	})
	return r
}

// register runs l.Register in the background; the returned stop cancels it
// and returns its result.
func register(t *testing.T, l Registrar, n *databasev1.Node) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Register(ctx, n) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func TestLocalWatchSeesRegisterAndStop(t *testing.T) {
	l := NewLocal()
	w := startWatch(t, l)
	poll.Until(t, "initial empty snapshot", func() bool {
		u, ok := w.last()
		return ok && len(u.Nodes) == 0
	})

	stopA := register(t, l, testNode("a", "127.0.0.1:1", databasev1.Role_ROLE_DATA))
	poll.Until(t, "a added", func() bool { u, _ := w.last(); return addrs(u)["a"] == "127.0.0.1:1" })

	// Same name and address: the registration is replaced in place.
	upd := testNode("a", "127.0.0.1:1", databasev1.Role_ROLE_DATA)
	upd.Labels = map[string]string{"capacity": "2"}
	stopA2 := register(t, l, upd)
	poll.Until(t, "a updated", func() bool {
		u, _ := w.last()
		return len(u.Nodes) == 1 && u.Nodes[0].GetLabels()["capacity"] == "2"
	})
	// The replaced registration no longer owns the name.
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	if err := stopA2(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a deleted", func() bool { u, _ := w.last(); return len(u.Nodes) == 0 })

	var types []EventType
	for _, e := range w.events() {
		types = append(types, e.Type)
	}
	// A slow watcher may coalesce, but this one saw every step.
	want := []EventType{EventAdd, EventUpdate, EventDelete}
	if len(types) != len(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v, want %v", types, want)
		}
	}
}

func TestLocalLateWatcherGetsSnapshot(t *testing.T) {
	l := NewLocal()
	register(t, l, testNode("a", "x:1"))
	register(t, l, testNode("b", "x:2"))
	w := startWatch(t, l)
	poll.Until(t, "snapshot of a and b", func() bool { u, _ := w.last(); return len(u.Nodes) == 2 })
	w.mu.Lock()
	defer w.mu.Unlock()
	// Registrations may still land while the watch starts; whichever update
	// first holds both nodes, its events add up from empty.
	if n := len(w.updates[0].Events); n != len(w.updates[0].Nodes) {
		t.Fatalf("first update: %d events for %d nodes", n, len(w.updates[0].Nodes))
	}
}

func TestLocalNameTaken(t *testing.T) {
	l := NewLocal()
	register(t, l, testNode("a", "x:1"))
	w := startWatch(t, l)
	poll.Until(t, "a registered", func() bool { u, _ := w.last(); return addrs(u)["a"] == "x:1" })
	err := l.Register(context.Background(), testNode("a", "x:2"))
	if !errors.Is(err, ErrNodeNameTaken) {
		t.Fatalf("Register = %v, want ErrNodeNameTaken", err)
	}
	if u, _ := w.last(); addrs(u)["a"] != "x:1" {
		t.Fatalf("refused registration changed the node: %v", addrs(u))
	}
}

func TestLocalInvalidNode(t *testing.T) {
	err := NewLocal().Register(context.Background(), testNode("a", ""))
	if !errors.Is(err, ErrInvalidNode) {
		t.Fatalf("Register = %v, want ErrInvalidNode", err)
	}
}

func TestLocalRegisterDoesNotAliasCaller(t *testing.T) {
	l := NewLocal()
	n := testNode("a", "x:1")
	register(t, l, n)
	w := startWatch(t, l)
	poll.Until(t, "a registered", func() bool { u, _ := w.last(); return len(u.Nodes) == 1 })
	n.GrpcAddress = "changed:1"
	if u, _ := w.last(); u.Nodes[0] == n || u.Nodes[0].GetGrpcAddress() != "x:1" {
		t.Fatal("registry shares the caller's node")
	}
}
