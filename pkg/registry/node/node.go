package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// Errors callers branch on; implementations wrap them with detail.
var (
	// ErrNodeNameTaken: another live node, at a different gRPC address,
	// is registered under the same name. Two processes were given one name;
	// one of them must be renamed (or the other stopped).
	ErrNodeNameTaken = errors.New("node: name taken by another live node")
	// ErrInvalidNode: the node cannot be registered or was skipped by a
	// watcher: no name, a name with '/', no gRPC address, or an unknown role.
	ErrInvalidNode = errors.New("node: invalid node")
)

// Registrar announces one node for as long as its process runs.
type Registrar interface {
	// Register publishes n and keeps it registered until ctx is done, then
	// removes it and returns. Losing the registry for a while is retried,
	// not returned: Register returns early only when n can never be
	// registered (ErrInvalidNode, ErrNodeNameTaken). After ctx is done it
	// returns nil, or an error saying the node could not be removed (it
	// then disappears when its registration expires).
	Register(ctx context.Context, n *databasev1.Node) error
}

// Watcher follows the set of live nodes.
type Watcher interface {
	// Watch calls h with the current set of live nodes, then once per
	// change, until ctx is done; it returns ctx's error. Calls are serial,
	// on Watch's goroutine: a slow handler delays the next update (and the
	// implementation's buffer of pending changes grows meanwhile), it never
	// sees two at once.
	Watch(ctx context.Context, h Handler) error
}

// Handler receives the updates of a Watch. It must not keep or modify the
// Update's slices beyond the call, except Nodes, which is immutable and may
// be kept; the nodes themselves must never be modified.
type Handler func(Update)

// Update is one step of a Watch.
type Update struct {
	// Revision orders updates of one Watch; it grows with every update.
	Revision int64
	// Nodes is the whole set of live nodes after this update, sorted by
	// name: a consistent snapshot, never a half-applied one.
	Nodes []*databasev1.Node
	// Events turn the previous update's Nodes into this one's, in the
	// order they happened, or sorted by name when the implementation only
	// saw the outcome (a re-list). The first update of a Watch has one
	// EventAdd per node, or none if nobody is registered yet.
	Events []Event
}

// EventType says what happened to a node.
type EventType int

// Event types.
const (
	EventAdd EventType = iota + 1
	EventUpdate
	EventDelete
)

func (t EventType) String() string {
	switch t {
	case EventAdd:
		return "add"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change to the set of live nodes.
type Event struct {
	Type EventType
	// Node is the node after the change; for EventDelete, its last value.
	Node *databasev1.Node
	// Prev is the node before an EventUpdate; nil for other types.
	Prev *databasev1.Node
}

// Name is the name of the node the event is about.
func (e Event) Name() string { return e.Node.GetMetadata().GetName() }

// Validate reports, wrapping ErrInvalidNode, why n cannot be a live node.
func Validate(n *databasev1.Node) error {
	if n == nil {
		return fmt.Errorf("%w: nil", ErrInvalidNode)
	}
	name := n.GetMetadata().GetName()
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidNode)
	case strings.ContainsRune(name, '/'):
		// The name is the last segment of a registry key.
		return fmt.Errorf("%w: name %q contains '/'", ErrInvalidNode, name)
	case n.GetGrpcAddress() == "":
		return fmt.Errorf("%w: node %q has no gRPC address", ErrInvalidNode, name)
	}
	for _, r := range n.GetRoles() {
		if _, ok := databasev1.Role_name[int32(r)]; !ok || r == databasev1.Role_ROLE_UNSPECIFIED {
			return fmt.Errorf("%w: node %q has unknown role %d", ErrInvalidNode, name, int32(r))
		}
	}
	return nil
}

// Diff returns the events that turn prev into next (both keyed by node
// name), sorted by name. A node equal in both yields no event.
func Diff(prev, next map[string]*databasev1.Node) []Event {
	var events []Event
	for name, p := range prev {
		n, ok := next[name]
		switch {
		case !ok:
			events = append(events, Event{Type: EventDelete, Node: p})
		case !proto.Equal(p, n):
			events = append(events, Event{Type: EventUpdate, Node: n, Prev: p})
		}
	}
	for name, n := range next {
		if _, ok := prev[name]; !ok {
			events = append(events, Event{Type: EventAdd, Node: n})
		}
	}
	slices.SortFunc(events, func(a, b Event) int { return strings.Compare(a.Name(), b.Name()) })
	return events
}

// Sorted returns the nodes of m (keyed by name) sorted by name.
func Sorted(m map[string]*databasev1.Node) []*databasev1.Node {
	nodes := make([]*databasev1.Node, 0, len(m))
	for _, n := range m {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b *databasev1.Node) int {
		return strings.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	return nodes
}
