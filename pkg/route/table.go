package route

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Node is a live data node as the placement sees it.
type Node struct {
	// Name is the node's stable identity (its registry key). It is what the
	// HRW hash sees, so a node keeps its shards across restarts and
	// re-addressing as long as its name is unchanged.
	Name string
	// Addr is where to send; it takes no part in placement.
	Addr string
	// Weight is the node's registered capacity relative to the others; 0
	// counts as 1. A node of weight 2 takes about twice the shards.
	Weight uint32
}

func (n Node) weight() uint32 { return max(n.Weight, 1) }

// Group is the part of a group definition placement needs.
type Group struct {
	Name     string
	ShardNum uint32 // resource_opts.shard_num; 1..MaxShardNum
	// Replicas is resource_opts.replicas, the copies beyond the primary.
	// With fewer live nodes than Replicas+1, each node holds one copy.
	Replicas uint32
}

// MaxShardNum bounds a group's shard count. Building a table takes memory
// and time in proportion to shards × nodes, and a count past this is a typo
// that would otherwise take the liaison down rather than fail one update.
const MaxShardNum = 1 << 12

// Table is an immutable placement snapshot: every known group's shards
// placed on one node set. All methods are safe for concurrent use. The slices
// Nodes and Locate return are shared by every caller and must not be
// modified; they are capped, so appending to one copies.
type Table struct {
	version  uint64
	nodes    []Node // sorted by name: the index order every liaison agrees on
	weighted bool
	groups   map[string]*groupTable
}

type groupTable struct {
	group  Group
	copies int    // copies per shard: min(Replicas+1, len(nodes))
	nodes  []Node // shard s's copies, primary first, at [s*copies : (s+1)*copies]
	// repaired and overflow count replicas placed by augmenting path and
	// above quota; tests read them, the hot path does not.
	repaired, overflow int
}

// NewTable places every group on nodes. The result depends only on the set
// of node names and weights and on the groups, never on slice order, so every
// liaison that sees the same registry state builds the same table. Zero
// nodes is allowed (lookups then fail with ErrNoNodes); an empty or duplicate
// node name fails with ErrInvalidNode, and an empty or duplicate group name
// or a shard count outside 1..MaxShardNum with ErrInvalidGroup. Any invalid
// entry fails the whole build: a table that silently dropped a group would
// answer ErrUnknownGroup for a group the registry holds.
func NewTable(version uint64, nodes []Node, groups []Group) (*Table, error) {
	t := &Table{
		version: version,
		nodes:   slices.Clone(nodes),
		groups:  make(map[string]*groupTable, len(groups)),
	}
	slices.SortFunc(t.nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	var errs []error
	for i, n := range t.nodes {
		if n.Name == "" {
			errs = append(errs, fmt.Errorf("%w: empty name (address %q)", ErrInvalidNode, n.Addr))
		} else if i > 0 && t.nodes[i-1].Name == n.Name {
			errs = append(errs, fmt.Errorf("%w: duplicate name %q", ErrInvalidNode, n.Name))
		}
	}
	for _, g := range groups {
		switch _, dup := t.groups[g.Name]; {
		case g.Name == "":
			errs = append(errs, fmt.Errorf("%w: empty name", ErrInvalidGroup))
		case dup:
			errs = append(errs, fmt.Errorf("%w: duplicate name %q", ErrInvalidGroup, g.Name))
		case g.ShardNum == 0:
			errs = append(errs, fmt.Errorf("%w: group %q: %w", ErrInvalidGroup, g.Name, ErrInvalidShardNum))
		case g.ShardNum > MaxShardNum:
			errs = append(errs, fmt.Errorf("%w: group %q has %d shards, more than %d",
				ErrInvalidGroup, g.Name, g.ShardNum, MaxShardNum))
		default:
			t.groups[g.Name] = &groupTable{group: g}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(t.nodes) == 0 {
		return t, nil
	}
	sc := newScorer(t.nodes)
	t.weighted = sc.weighted
	for name, gt := range t.groups {
		p := place(sc, name, gt.group.ShardNum, gt.group.Replicas)
		gt.copies = p.copies
		gt.repaired, gt.overflow = p.repaired, p.overflow
		gt.nodes = make([]Node, len(p.assign))
		for i, idx := range p.assign {
			gt.nodes[i] = t.nodes[idx]
		}
	}
	return t, nil
}

// Version is the snapshot's version; Router increments it on every swap.
func (t *Table) Version() uint64 { return t.version }

// Members returns a copy of the live nodes the table was built from, sorted
// by name.
func (t *Table) Members() []Node { return slices.Clone(t.nodes) }

// Group returns the definition the table holds for a group.
func (t *Table) Group(name string) (Group, bool) {
	gt, ok := t.groups[name]
	if !ok {
		return Group{}, false
	}
	return gt.group, true
}

// Groups returns the definitions of every group the table holds, sorted by
// name. It allocates; it is meant for status pages, not the write path.
func (t *Table) Groups() []Group {
	out := make([]Group, 0, len(t.groups))
	for _, gt := range t.groups {
		out = append(out, gt.group)
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Nodes returns the nodes that hold shard's copies: the primary first, then
// the replicas in HRW order. It has min(Replicas+1, live nodes) entries and
// does not allocate.
func (t *Table) Nodes(group string, shard uint32) ([]Node, error) {
	gt, err := t.lookup(group, shard)
	if err != nil {
		return nil, err
	}
	return gt.shard(shard), nil
}

// Locate hashes a series key to its shard in group and returns the shard
// and its nodes as Nodes does. It is the write path's one call per series.
func (t *Table) Locate(group string, seriesKey []byte) (uint32, []Node, error) {
	gt, err := t.lookup(group, 0)
	if err != nil {
		return 0, nil, err
	}
	shard, _ := ShardID(seriesKey, gt.group.ShardNum) // NewTable rejected 0
	return shard, gt.shard(shard), nil
}

func (gt *groupTable) shard(s uint32) []Node {
	lo, hi := int(s)*gt.copies, (int(s)+1)*gt.copies
	return gt.nodes[lo:hi:hi]
}

// Order returns every live node in the order a copy of shard should try them:
// first the Nodes (primary, then replicas), then every other node in HRW
// order. A send that fails on one node is re-placed on the first node of this
// order that neither holds a copy nor has failed. It allocates; it is meant
// for the failure path, not for every write.
func (t *Table) Order(group string, shard uint32) ([]Node, error) {
	gt, err := t.lookup(group, shard)
	if err != nil {
		return nil, err
	}
	placed := gt.shard(shard)
	out := make([]Node, 0, len(t.nodes))
	out = append(out, placed...)
	sc := newScorer(t.nodes)
	for _, s := range sc.rank(make([]score, 0, len(t.nodes)), group, shard) {
		n := t.nodes[s.node]
		if !slices.ContainsFunc(placed, func(p Node) bool { return p.Name == n.Name }) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (t *Table) lookup(group string, shard uint32) (*groupTable, error) {
	gt, ok := t.groups[group]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %q", ErrUnknownGroup, group)
	case len(t.nodes) == 0:
		return nil, fmt.Errorf("group %q: %w", group, ErrNoNodes)
	case shard >= gt.group.ShardNum:
		return nil, fmt.Errorf("%w: group %q has %d shards, asked for shard %d",
			ErrShardOutOfRange, group, gt.group.ShardNum, shard)
	}
	return gt, nil
}
