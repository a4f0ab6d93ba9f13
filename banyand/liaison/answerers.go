package liaison

import (
	"slices"

	"github.com/banyand-io/banyand/pkg/route"
)

// ShardAnswerers plans where a measure query's aggregation runs: partial
// aggregates from the data nodes are exact only when each point is
// counted by exactly one node, so each shard needs one node that holds
// every acknowledged point of it (docs/design/queries.md).
type ShardAnswerers interface {
	// Answerers returns the plan for group, or false when no node can be
	// trusted to hold every point of some shard: the query then ships
	// the group's points to the liaison.
	Answerers(group string) (AnswerPlan, bool)
}

// AnswerPlan assigns the shards of a group to the data nodes answering
// for them.
type AnswerPlan struct {
	// All says one store holds the whole group (standalone): it answers
	// for every shard.
	All bool
	// Answerer is, by shard, the node answering for it; "" for a shard
	// no node is known to hold.
	Answerer []string
	// Held is node → the shards it is known to hold.
	Held map[string][]uint32
}

// ShardsOf lists the shards node answers for.
func (p AnswerPlan) ShardsOf(node string) []uint32 {
	var out []uint32
	for s, n := range p.Answerer {
		if n == node {
			out = append(out, uint32(s))
		}
	}
	return out
}

// Knows reports whether the plan accounts for node holding points of
// shard: a node that holds points of a shard the plan did not know it
// holds (a holder record not yet seen) may hold points its answerer lacks.
func (p AnswerPlan) Knows(node string, shard uint32) bool {
	if p.All {
		return true
	}
	return int(shard) < len(p.Answerer) && p.Answerer[shard] != "" && slices.Contains(p.Held[node], shard)
}

// OneStore is the plan of standalone, where one store holds every group.
type OneStore struct{}

// Answerers implements ShardAnswerers.
func (OneStore) Answerers(string) (AnswerPlan, bool) { return AnswerPlan{All: true}, true }

// Answerers implements ShardAnswerers from the holder records. A shard's
// points are all on each of its holders when every holder is in the
// shard's current placement and no node keeps hints of it: a write is
// acknowledged once every copy its placement asks for is durable, else it
// leaves a hint; a copy re-placed off the placement, or a placement that
// moved since, leaves a holder outside it. Then any one holder answers
// for the shard; holders take shards in turn, fewest first, to spread the
// work.
func (h *Holders) Answerers(group string) (AnswerPlan, bool) {
	p := h.cur.Load()
	if p == nil {
		return AnswerPlan{}, false
	}
	t := h.router.Current()
	g, ok := t.Group(group)
	if !ok {
		return AnswerPlan{}, false
	}
	hinted := map[uint32]bool{}
	for _, shards := range p.hinted[group] {
		for _, s := range shards {
			hinted[s] = true
		}
	}
	holders := make([][]string, g.ShardNum)
	for node, shards := range p.held[group] {
		for _, s := range shards {
			if s >= g.ShardNum {
				return AnswerPlan{}, false
			}
			holders[s] = append(holders[s], node)
		}
	}
	plan := AnswerPlan{Answerer: make([]string, g.ShardNum), Held: p.held[group]}
	load := map[string]int{}
	for s, hs := range holders {
		if len(hs) == 0 {
			continue
		}
		if hinted[uint32(s)] {
			return AnswerPlan{}, false
		}
		placed, err := t.Nodes(group, uint32(s))
		if err != nil {
			return AnswerPlan{}, false
		}
		for _, n := range hs {
			if !slices.ContainsFunc(placed, func(pn route.Node) bool { return pn.Name == n }) {
				return AnswerPlan{}, false
			}
		}
		pick := ""
		for _, n := range placed { // placement order: the same pick on every liaison
			if slices.Contains(hs, n.Name) && (pick == "" || load[n.Name] < load[pick]) {
				pick = n.Name
			}
		}
		plan.Answerer[s] = pick
		load[pick]++
	}
	return plan, true
}
