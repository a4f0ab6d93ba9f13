package liaison

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/banyand-io/banyand/pkg/route"
)

// DataHolders says which data nodes a query of a group cannot do without
// but cannot reach.
type DataHolders interface {
	// Unreachable lists the nodes that hold data of group but are not
	// reachable, each with the shards it holds, sorted by name: not in the
	// node table now, or, when answered is not nil, not among the nodes
	// that answered the query.
	Unreachable(group string, answered map[string]bool) []Unreachable
}

// Unreachable is a node holding data of a group that a query would not
// hear from.
type Unreachable struct {
	Node   string
	Shards []uint32
}

func (u Unreachable) String() string { return fmt.Sprintf("%s (shards %v)", u.Node, u.Shards) }

// Holders follows the holder records (which node holds which shards of each
// group; pkg/registry/etcd) and answers DataHolders against the router's
// node table. Records outlive a node's lease: a node that is down, paused
// past its lease or restarting still holds its data, and a query that does
// not hear from it must not answer as if it had everything.
type Holders struct {
	router *route.Router
	cur    atomic.Pointer[holderSets]
	ready  chan struct{}
	once   sync.Once
}

// holderSets are the records: group → node → shards.
type holderSets struct {
	held, hinted map[string]map[string][]uint32
}

// NewHolders returns an empty set; Ready is closed after the first Set.
func NewHolders(router *route.Router) *Holders {
	return &Holders{router: router, ready: make(chan struct{})}
}

// Set replaces the records, each group → node → shards: held, the shards
// each node holds data of; hinted, those it keeps hints of (writes acked
// with fewer copies than the group's replicas). The watcher calls it.
func (h *Holders) Set(held, hinted map[string]map[string][]uint32) {
	h.cur.Store(&holderSets{held: held, hinted: hinted})
	h.once.Do(func() { close(h.ready) })
}

// Hinted returns the hinted records: group → node → shards it keeps
// hints of. Callers must not modify it.
func (h *Holders) Hinted() map[string]map[string][]uint32 {
	if p := h.cur.Load(); p != nil {
		return p.hinted
	}
	return nil
}

// Ready is closed once the records are known: a liaison answers queries
// only after it.
func (h *Holders) Ready() <-chan struct{} { return h.ready }

// Unreachable implements DataHolders. A node that is away is not missed
// when the group keeps replicas and every shard it holds has another
// holder that is live, unless it keeps hints of that shard: every write
// acknowledged with all its copies has one on the live holder, and the
// query asks every live node; a write acknowledged with fewer copies was
// hinted, and until the hint is handed off the hinting node may hold its
// only copy.
func (h *Holders) Unreachable(group string, answered map[string]bool) []Unreachable {
	p := h.cur.Load()
	if p == nil {
		return nil
	}
	byNode := p.held[group]
	if len(byNode) == 0 {
		return nil
	}
	t := h.router.Current()
	live := answered
	if live == nil {
		live = map[string]bool{}
		for _, n := range t.Members() {
			live[n.Name] = true
		}
	}
	g, _ := t.Group(group)
	// liveHolders counts, per shard, the live nodes holding it.
	liveHolders := map[uint32]int{}
	for node, shards := range byNode {
		if live[node] {
			for _, s := range shards {
				liveHolders[s]++
			}
		}
	}
	var out []Unreachable
	for node, shards := range byNode {
		if live[node] {
			continue
		}
		var missed []uint32
		hinted := p.hinted[group][node]
		for _, s := range shards {
			if g.Replicas == 0 || liveHolders[s] == 0 || slices.Contains(hinted, s) {
				missed = append(missed, s)
			}
		}
		if len(missed) > 0 {
			out = append(out, Unreachable{Node: node, Shards: missed})
		}
	}
	slices.SortFunc(out, func(a, b Unreachable) int { return strings.Compare(a.Node, b.Node) })
	return out
}
