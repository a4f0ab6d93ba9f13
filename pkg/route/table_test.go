package route

import (
	"errors"
	"slices"
	"testing"
)

func TestTableErrors(t *testing.T) {
	tb := mustTable(t, namedNodes("a", "b"), Group{Name: "g", ShardNum: 4})
	empty := mustTable(t, nil, Group{Name: "g", ShardNum: 4})
	tests := []struct {
		name  string
		table *Table
		group string
		shard uint32
		want  error
	}{
		{"unknown group", tb, "nope", 0, ErrUnknownGroup},
		{"shard out of range", tb, "g", 4, ErrShardOutOfRange},
		{"no nodes", empty, "g", 0, ErrNoNodes},
		{"unknown group without nodes", empty, "nope", 0, ErrUnknownGroup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.table.Nodes(tt.group, tt.shard); !errors.Is(err, tt.want) {
				t.Errorf("Nodes: err = %v, want %v", err, tt.want)
			}
			if _, err := tt.table.Order(tt.group, tt.shard); !errors.Is(err, tt.want) {
				t.Errorf("Order: err = %v, want %v", err, tt.want)
			}
			if !errors.Is(tt.want, ErrShardOutOfRange) { // Locate computes an in-range shard
				if _, _, err := tt.table.Locate(tt.group, []byte("k")); !errors.Is(err, tt.want) {
					t.Errorf("Locate: err = %v, want %v", err, tt.want)
				}
			}
		})
	}
}

func TestNewTableInvalid(t *testing.T) {
	tests := []struct {
		name   string
		nodes  []Node
		groups []Group
		want   error
	}{
		{"empty node name", []Node{{Addr: "x:1"}}, nil, ErrInvalidNode},
		{"duplicate node", namedNodes("a", "b", "a"), nil, ErrInvalidNode},
		{"empty group name", namedNodes("a"), []Group{{ShardNum: 1}}, ErrInvalidGroup},
		{"duplicate group", namedNodes("a"), []Group{{Name: "g", ShardNum: 1}, {Name: "g", ShardNum: 2}}, ErrInvalidGroup},
		{"zero shards", namedNodes("a"), []Group{{Name: "g"}}, ErrInvalidShardNum},
		{"too many shards", namedNodes("a"), []Group{{Name: "g", ShardNum: MaxShardNum + 1}}, ErrInvalidGroup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewTable(1, tt.nodes, tt.groups); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestLocate(t *testing.T) {
	tb := mustTable(t, namedNodes("a", "b", "c"), Group{Name: "g", ShardNum: 8, Replicas: 1})
	key, _ := AppendSeriesKey(nil, "service_cpm", []EntityValue{StrValue("svc-1")})
	shard, nodes, err := tb.Locate("g", key)
	if err != nil {
		t.Fatal(err)
	}
	wantShard, _ := ShardID(key, 8)
	wantNodes, _ := tb.Nodes("g", wantShard)
	if shard != wantShard || !slices.Equal(nodes, wantNodes) {
		t.Fatalf("Locate = %d %v, want %d %v", shard, nodes, wantShard, wantNodes)
	}
}

// TestNodesSliceIsolated checks that appending to a returned slice cannot
// overwrite the next shard's entry in the shared table, and that Members
// hands out a copy.
func TestNodesSliceIsolated(t *testing.T) {
	tb := mustTable(t, namedNodes("a", "b", "c"), Group{Name: "g", ShardNum: 4})
	next, _ := tb.Nodes("g", 1)
	want := next[0]
	first, _ := tb.Nodes("g", 0)
	_ = append(first, Node{Name: "intruder"})
	if got, _ := tb.Nodes("g", 1); got[0] != want {
		t.Fatalf("append to shard 0's nodes changed shard 1 to %v", got[0])
	}
	members := tb.Members()
	members[1].Name = "intruder"
	if tb.Members()[1].Name == "intruder" {
		t.Fatal("append to Members changed the table")
	}
}

func TestNodesNoAlloc(t *testing.T) {
	tb := mustTable(t, namedNodes("a", "b", "c"), Group{Name: "g", ShardNum: 16, Replicas: 1})
	key := []byte("series")
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := tb.Locate("g", key); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Locate allocated %v times per call", allocs)
	}
}

func TestGroupsSortedByName(t *testing.T) {
	tb := mustTable(t, namedNodes("a"), Group{Name: "zeta", ShardNum: 1}, Group{Name: "alpha", ShardNum: 2, Replicas: 1})
	want := []Group{{Name: "alpha", ShardNum: 2, Replicas: 1}, {Name: "zeta", ShardNum: 1}}
	if got := tb.Groups(); !slices.Equal(got, want) {
		t.Fatalf("Groups() = %v, want %v", got, want)
	}
}
