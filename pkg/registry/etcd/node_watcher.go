package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry/node"
)

// NodeWatcher follows the nodes registered under <Namespace>/nodes/: it
// lists them at a revision R, watches from R+1, and lists again when the
// watch is compacted away or closed, so it never misses a change for long
// and never applies one twice.
//
// Entries that are not valid nodes (bytes that do not decode, unknown roles,
// no gRPC address, a key that does not match the node's name) are skipped
// with a warning and counted; a valid node overwritten by such an entry is
// reported deleted, exactly as a fresh list would show it.
type NodeWatcher struct {
	cfg NodeConfig
	cli *clientv3.Client
	log *slog.Logger

	skipped atomic.Int64
	relists atomic.Int64
}

var _ node.Watcher = (*NodeWatcher)(nil)

// NodeWatcherStats counts what a NodeWatcher did since it was made.
type NodeWatcherStats struct {
	// Skipped are entries under the prefix that were not valid nodes, each
	// counted every time it was read (in a list or a watch event).
	Skipped int64
	// Relists are lists after the first of a Watch: compactions, closed
	// watches, lost leaders.
	Relists int64
}

// NewNodeWatcher returns a watcher reading through cli; it does no I/O.
// A nil log means slog.Default().
func NewNodeWatcher(cfg NodeConfig, cli *clientv3.Client, log *slog.Logger) (*NodeWatcher, error) {
	cfg, log, err := watcherSetup("node-watcher", cfg, cli, log)
	if err != nil {
		return nil, err
	}
	return &NodeWatcher{cfg: cfg, cli: cli, log: log}, nil
}

// watcherSetup checks what a watcher of the node namespace is given and
// returns its config with defaults and its logger.
func watcherSetup(component string, cfg NodeConfig, cli *clientv3.Client, log *slog.Logger) (NodeConfig, *slog.Logger, error) {
	if err := cfg.Validate(); err != nil {
		return NodeConfig{}, nil, err
	}
	if cli == nil {
		return NodeConfig{}, nil, fmt.Errorf("etcd %s: nil client", component)
	}
	if log == nil {
		log = slog.Default()
	}
	return cfg.withDefaults(), log.With("component", component), nil
}

// Stats returns the watcher's counters.
func (w *NodeWatcher) Stats() NodeWatcherStats {
	return NodeWatcherStats{Skipped: w.skipped.Load(), Relists: w.relists.Load()}
}

// nodeWatch is the state of one Watch call, owned by its goroutine.
type nodeWatch struct {
	w         *NodeWatcher
	prefix    string
	h         node.Handler
	nodes     map[string]*databasev1.Node // what h was last told
	delivered bool                        // h has had its first update
}

// Watch implements node.Watcher. While etcd is unreachable it keeps the
// last update and retries with backoff; h is told nothing until the set is
// known again.
func (w *NodeWatcher) Watch(ctx context.Context, h node.Handler) error {
	s := &nodeWatch{w: w, prefix: w.cfg.nodesPrefix(), h: h, nodes: map[string]*databasev1.Node{}}
	return follow(ctx, followConfig{cli: w.cli, log: w.log, prefix: s.prefix,
		retryMin: w.cfg.RetryMin, retryMax: w.cfg.RetryMax, relists: &w.relists}, s)
}

// listed tells h the difference between what it knew and the nodes of a
// fresh list.
func (s *nodeWatch) listed(rev int64, kvs []*mvccpb.KeyValue) {
	next := make(map[string]*databasev1.Node, len(kvs))
	for _, kv := range kvs {
		if n := s.decode(kv); n != nil {
			next[n.GetMetadata().GetName()] = n
		}
	}
	events := node.Diff(s.nodes, next)
	s.nodes = next
	if !s.delivered || len(events) > 0 {
		s.deliver(rev, events)
	}
}

// changed applies one watch response.
func (s *nodeWatch) changed(rev int64, evs []*clientv3.Event) {
	if events := s.apply(evs); len(events) > 0 {
		s.deliver(rev, events)
	}
}

// apply updates the known set with a watch response's events and returns
// the events h should see.
func (s *nodeWatch) apply(evs []*clientv3.Event) []node.Event {
	next := maps.Clone(s.nodes)
	var out []node.Event
	for _, ev := range evs {
		name := strings.TrimPrefix(string(ev.Kv.Key), s.prefix)
		var n *databasev1.Node
		if ev.Type == clientv3.EventTypePut {
			n = s.decode(ev.Kv) // nil for an invalid entry: it hides any node there
		}
		prev, had := next[name]
		switch {
		case n == nil && had:
			delete(next, name)
			out = append(out, node.Event{Type: node.EventDelete, Node: prev})
		case n == nil:
		case !had:
			next[name] = n
			out = append(out, node.Event{Type: node.EventAdd, Node: n})
		case !proto.Equal(prev, n):
			next[name] = n
			out = append(out, node.Event{Type: node.EventUpdate, Node: n, Prev: prev})
		default:
			// Re-put of an equal node, e.g. a re-registration after a lost
			// lease: keep the old value, tell nobody.
		}
	}
	s.nodes = next
	return out
}

func (s *nodeWatch) deliver(rev int64, events []node.Event) {
	s.delivered = true
	s.h(node.Update{Revision: rev, Nodes: node.Sorted(s.nodes), Events: events})
}

// decode returns the node at kv, or nil after warning about and counting
// an entry that is not a valid node.
func (s *nodeWatch) decode(kv *mvccpb.KeyValue) *databasev1.Node {
	n, err := decodeNodeKV(s.prefix, kv)
	if err != nil {
		s.w.skipped.Add(1)
		s.w.log.Warn("skipping invalid node entry", "key", string(kv.Key), "mod_revision", kv.ModRevision, "err", err)
		return nil
	}
	return n
}

// WaitForNodes blocks until at least n data nodes (role data; liaisons
// register too) are registered under cfg's namespace, or ctx is done.
// Tools and tests that start data nodes and then a liaison use it, so the
// liaison's first snapshot holds them all.
func WaitForNodes(ctx context.Context, cfg NodeConfig, cli *clientv3.Client, n int) error {
	w, err := NewNodeWatcher(cfg, cli, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	registered := false
	err = w.Watch(wctx, func(u node.Update) {
		data := 0
		for _, nd := range u.Nodes {
			if slices.Contains(nd.GetRoles(), databasev1.Role_ROLE_DATA) {
				data++
			}
		}
		if data >= n {
			registered = true
			cancel()
		}
	})
	if registered {
		return nil
	}
	if err == nil {
		err = ctx.Err()
	}
	return fmt.Errorf("waiting for %d registered data nodes: %w", n, err)
}
