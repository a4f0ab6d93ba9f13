package node

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// Local is the in-process Registrar and Watcher of standalone mode: nodes
// registered in this process, seen by watchers in this process. Nothing is
// persisted: a node is live exactly while its Register call runs.
//
// Registering never waits for watchers. Each watcher reads the latest set
// when it is ready for more and is handed the difference from what it saw
// last, so a slow watcher costs no memory but may never see a change that
// was undone before it looked (a node added and removed in between).
type Local struct {
	mu        sync.Mutex
	rev       int64
	nodes     map[string]*databasev1.Node // never modified: replaced on every change
	owners    map[string]uint64           // which Register call owns each name
	nextOwner uint64
	changed   chan struct{} // closed on every change, then replaced
}

var (
	_ Registrar = (*Local)(nil)
	_ Watcher   = (*Local)(nil)
)

// NewLocal returns an empty in-process registry.
func NewLocal() *Local {
	return &Local{
		nodes:   map[string]*databasev1.Node{},
		owners:  map[string]uint64{},
		changed: make(chan struct{}),
	}
}

// Register implements Registrar. A node already registered under the same
// name and gRPC address is replaced (its Register call then no longer
// removes it); one at a different address is refused with ErrNodeNameTaken.
func (l *Local) Register(ctx context.Context, n *databasev1.Node) error {
	if err := Validate(n); err != nil {
		return err
	}
	n = proto.CloneOf(n)
	if n.CreatedAt == nil {
		n.CreatedAt = timestamppb.Now()
	}
	name := n.GetMetadata().GetName()

	l.mu.Lock()
	if cur, ok := l.nodes[name]; ok && cur.GetGrpcAddress() != n.GetGrpcAddress() {
		l.mu.Unlock()
		return fmt.Errorf("register node %q at %s: %w (registered at %s)",
			name, n.GetGrpcAddress(), ErrNodeNameTaken, cur.GetGrpcAddress())
	}
	l.nextOwner++
	me := l.nextOwner
	l.owners[name] = me
	l.setLocked(name, n)
	l.mu.Unlock()

	<-ctx.Done()

	l.mu.Lock()
	if l.owners[name] == me {
		delete(l.owners, name)
		l.setLocked(name, nil)
	}
	l.mu.Unlock()
	return nil
}

// setLocked sets (or, for nil, removes) a node and wakes the watchers.
func (l *Local) setLocked(name string, n *databasev1.Node) {
	next := maps.Clone(l.nodes)
	if n == nil {
		delete(next, name)
	} else {
		next[name] = n
	}
	l.nodes = next
	l.rev++
	close(l.changed)
	l.changed = make(chan struct{})
}

// Watch implements Watcher.
func (l *Local) Watch(ctx context.Context, h Handler) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var seen map[string]*databasev1.Node
	first := true
	for {
		l.mu.Lock()
		cur, rev, changed := l.nodes, l.rev, l.changed
		l.mu.Unlock()
		if events := Diff(seen, cur); first || len(events) > 0 {
			h(Update{Revision: rev, Nodes: Sorted(cur), Events: events})
		}
		first, seen = false, cur
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
