package route

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func namedNodes(names ...string) []Node {
	out := make([]Node, len(names))
	for i, n := range names {
		out[i] = Node{Name: n, Addr: n + ":17912"}
	}
	return out
}

func mustTable(t testing.TB, nodes []Node, groups ...Group) *Table {
	t.Helper()
	tb, err := NewTable(1, nodes, groups)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// layout returns, per shard, the names of the nodes holding a copy.
func layout(t testing.TB, tb *Table, group string) [][]string {
	t.Helper()
	g, ok := tb.Group(group)
	if !ok {
		t.Fatalf("group %q missing", group)
	}
	out := make([][]string, g.ShardNum)
	for s := range g.ShardNum {
		nodes, err := tb.Nodes(group, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			out[s] = append(out[s], n.Name)
		}
	}
	return out
}

// loads counts, per node name, primaries and all copies in a layout.
func loads(nodes []Node, l [][]string) (primaries, copies map[string]int) {
	primaries, copies = map[string]int{}, map[string]int{}
	for _, n := range nodes {
		primaries[n.Name], copies[n.Name] = 0, 0
	}
	for _, names := range l {
		primaries[names[0]]++
		for _, n := range names {
			copies[n]++
		}
	}
	return primaries, copies
}

func spread(m map[string]int) (lo, hi int) {
	lo, hi = int(^uint(0)>>1), 0
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func TestPlacementSmall(t *testing.T) {
	tests := []struct {
		name          string
		nodes         []Node
		group         Group
		wantCopies    int
		wantPrimaries []int // sorted loads
		wantCopyLoads []int // sorted loads
	}{
		{"1 node", namedNodes("a"), Group{"g", 4, 0}, 1, []int{4}, []int{4}},
		{"1 node, replicas capped", namedNodes("a"), Group{"g", 4, 2}, 1, []int{4}, []int{4}},
		{"2 nodes 4 shards", namedNodes("a", "b"), Group{"g", 4, 0}, 1, []int{2, 2}, []int{2, 2}},
		{"3 nodes 4 shards", namedNodes("a", "b", "c"), Group{"g", 4, 0}, 1, []int{1, 1, 2}, []int{1, 1, 2}},
		{"4 nodes 2 shards", namedNodes("a", "b", "c", "d"), Group{"g", 2, 0}, 1, []int{0, 0, 1, 1}, []int{0, 0, 1, 1}},
		{"3 nodes 3 shards r1", namedNodes("a", "b", "c"), Group{"g", 3, 1}, 2, []int{1, 1, 1}, []int{2, 2, 2}},
		{"3 nodes 4 shards r2", namedNodes("a", "b", "c"), Group{"g", 4, 2}, 3, []int{1, 1, 2}, []int{4, 4, 4}},
		{"5 nodes 7 shards r1", namedNodes("a", "b", "c", "d", "e"), Group{"g", 7, 1}, 2, []int{1, 1, 1, 2, 2}, []int{2, 3, 3, 3, 3}},
		{"weighted 1:3", []Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}}, Group{"g", 8, 0}, 1, []int{2, 6}, []int{2, 6}},
		{"weight 0 counts as 1", []Node{{Name: "a", Weight: 0}, {Name: "b", Weight: 1}}, Group{"g", 6, 0}, 1, []int{3, 3}, []int{3, 3}},
		{"max shards", namedNodes("a", "b", "c"), Group{"g", MaxShardNum, 1}, 2, []int{1365, 1365, 1366}, []int{2730, 2731, 2731}},
		// a's share of 8 copies is 6.67 > 4 shards: pinned at 4, rest split.
		{"weighted heavy, replicas", []Node{{Name: "a", Weight: 10}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}, Group{"g", 4, 1}, 2, []int{0, 0, 4}, []int{2, 2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := mustTable(t, tt.nodes, tt.group)
			l := layout(t, tb, tt.group.Name)
			for s, names := range l {
				if len(names) != tt.wantCopies {
					t.Fatalf("shard %d has copies on %v, want %d copies", s, names, tt.wantCopies)
				}
				if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
					t.Fatalf("shard %d has two copies on one node: %v", s, names)
				}
			}
			p, c := loads(tt.nodes, l)
			if got := slices.Sorted(mapValues(p)); !slices.Equal(got, tt.wantPrimaries) {
				t.Errorf("primary loads %v (%v), want %v", got, p, tt.wantPrimaries)
			}
			if got := slices.Sorted(mapValues(c)); !slices.Equal(got, tt.wantCopyLoads) {
				t.Errorf("copy loads %v (%v), want %v", got, c, tt.wantCopyLoads)
			}
		})
	}
}

// TestPlacementGolden pins one small layout. Every liaison must compute the
// same table, including liaisons of different versions during a rolling
// upgrade: a change here moves shards in running clusters and needs a plan.
func TestPlacementGolden(t *testing.T) {
	nodes := namedNodes("data-0", "data-1", "data-2", "data-3")
	nodes[3].Weight = 2
	tb := mustTable(t, nodes,
		Group{Name: "sw_metric", ShardNum: 6, Replicas: 1},
		Group{Name: "sw_stream", ShardNum: 3, Replicas: 0})
	// data-3 (weight 2 of 5) holds 3 of 6 metric primaries (share 2.4) and 5
	// of 12 copies (share 4.8); the others 1 primary (1.2) and 2-3 copies (2.4).
	want := map[string][][]string{
		"sw_metric": {
			{"data-1", "data-3"}, {"data-0", "data-2"}, {"data-3", "data-0"},
			{"data-2", "data-3"}, {"data-3", "data-0"}, {"data-3", "data-1"},
		},
		"sw_stream": {{"data-0"}, {"data-3"}, {"data-2"}},
	}
	for g := range want {
		if got := layout(t, tb, g); !reflect.DeepEqual(got, want[g]) {
			t.Errorf("%s layout = %#v\nwant %#v", g, got, want[g])
		}
	}
}

func TestOrder(t *testing.T) {
	nodes := namedNodes("a", "b", "c", "d", "e")
	tb := mustTable(t, nodes, Group{"g", 8, 1})
	for s := range uint32(8) {
		placed, err := tb.Nodes("g", s)
		if err != nil {
			t.Fatal(err)
		}
		order, err := tb.Order("g", s)
		if err != nil {
			t.Fatal(err)
		}
		if len(order) != len(nodes) {
			t.Fatalf("shard %d: order %v misses nodes", s, order)
		}
		if !reflect.DeepEqual(order[:len(placed)], placed) {
			t.Fatalf("shard %d: order %v does not start with the placement %v", s, order, placed)
		}
		seen := map[string]bool{}
		for _, n := range order {
			if seen[n.Name] {
				t.Fatalf("shard %d: %s twice in %v", s, n.Name, order)
			}
			seen[n.Name] = true
		}
		// The failover tail is in HRW order: the rank recomputed here.
		ranked := newScorer(tb.Members()).rank(nil, "g", s)
		var tail []string
		for _, sc := range ranked {
			if !slices.ContainsFunc(placed, func(n Node) bool { return n.Name == tb.Members()[sc.node].Name }) {
				tail = append(tail, tb.Members()[sc.node].Name)
			}
		}
		var gotTail []string
		for _, n := range order[len(placed):] {
			gotTail = append(gotTail, n.Name)
		}
		if !slices.Equal(gotTail, tail) {
			t.Fatalf("shard %d: failover tail %v, want HRW order %v", s, gotTail, tail)
		}
	}
}

func mapValues(m map[string]int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func nodeNames(nodes []Node) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = fmt.Sprintf("%s/%d", n.Name, n.weight())
	}
	return fmt.Sprint(names)
}
