package liaison

import (
	"slices"
	"testing"

	"github.com/banyand-io/banyand/pkg/route"
)

// TestHoldersAnswerers: each shard with holders gets one live answerer
// when its holders are all in its placement and none keeps hints; a holder
// outside the placement or a hinted shard leaves the group to point
// shipping.
func TestHoldersAnswerers(t *testing.T) {
	router := route.NewRouter()
	nodes := []route.Node{{Name: "data-0", Addr: "a:1"}, {Name: "data-1", Addr: "a:2"}}
	if _, err := router.Update(nodes, []route.Group{{Name: "g", ShardNum: 4, Replicas: 1}, {Name: "solo", ShardNum: 4}}); err != nil {
		t.Fatal(err)
	}
	h := NewHolders(router)
	if _, ok := h.Answerers("g"); ok {
		t.Fatal("a plan before the records are known")
	}
	both := map[string][]uint32{"data-0": {0, 1, 2, 3}, "data-1": {0, 1, 2, 3}}
	// solo (replicas 0): every shard on the node placement gives it.
	solo := map[string][]uint32{}
	for s := range uint32(4) {
		placed, err := router.Current().Nodes("solo", s)
		if err != nil {
			t.Fatal(err)
		}
		solo[placed[0].Name] = append(solo[placed[0].Name], s)
	}
	cases := []struct {
		name   string
		group  string
		held   map[string][]uint32
		hinted map[string][]uint32
		exact  bool
	}{
		{"replicas on both nodes", "g", both, nil, true},
		{"each shard on its placement", "solo", solo, nil, true},
		{"some shards without holders", "g", map[string][]uint32{"data-0": {1}, "data-1": {1}}, nil, true},
		{"a holder outside the placement", "solo", both, nil, false},
		{"a holder that left", "g", map[string][]uint32{"data-0": {0}, "data-9": {0}}, nil, false},
		{"a shard with hints", "g", both, map[string][]uint32{"data-1": {2}}, false},
	}
	for _, c := range cases {
		h.Set(map[string]map[string][]uint32{c.group: c.held}, map[string]map[string][]uint32{c.group: c.hinted})
		plan, ok := h.Answerers(c.group)
		if ok != c.exact {
			t.Errorf("%s: exact = %v, want %v", c.name, ok, c.exact)
			continue
		}
		if !ok {
			continue
		}
		load := map[string]int{}
		for s, n := range plan.Answerer {
			holders := 0
			for node, shards := range c.held {
				if slices.Contains(shards, uint32(s)) {
					holders++
					if node == n {
						holders += 100
					}
				}
			}
			switch {
			case holders == 0 && n != "":
				t.Errorf("%s: shard %d held by nobody is answered by %s", c.name, s, n)
			case holders > 0 && holders < 100:
				t.Errorf("%s: shard %d answered by %q, not one of its holders", c.name, s, n)
			}
			if n != "" {
				load[n]++
				if !plan.Knows(n, uint32(s)) || !slices.Contains(plan.ShardsOf(n), uint32(s)) {
					t.Errorf("%s: plan does not know %s answers shard %d", c.name, n, s)
				}
			}
		}
		if c.name == "replicas on both nodes" && (load["data-0"] != 2 || load["data-1"] != 2) {
			t.Errorf("%s: shards answered %v, want 2 each", c.name, load)
		}
	}
	// A node the plan did not know holds a shard: the plan is stale.
	h.Set(map[string]map[string][]uint32{"g": {"data-0": {0}}}, nil)
	plan, _ := h.Answerers("g")
	if plan.Knows("data-1", 0) || plan.Knows("data-0", 1) {
		t.Error("plan knows holders it was not told of")
	}
	if p, ok := (OneStore{}).Answerers("any"); !ok || !p.All || !p.Knows("standalone", 7) {
		t.Errorf("one store: %+v %v", p, ok)
	}
}
