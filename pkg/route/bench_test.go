package route

import (
	"fmt"
	"testing"
)

func BenchmarkSeriesKey(b *testing.B) {
	values := []EntityValue{StrValue("service-a"), StrValue("instance-1"), IntValue(42)}
	dst := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = AppendSeriesKey(dst[:0], "service_instance_cpm", values); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkShardID(b *testing.B) {
	key, _ := AppendSeriesKey(nil, "service_instance_cpm", []EntityValue{StrValue("service-a"), StrValue("instance-1")})
	b.ReportAllocs()
	var sink uint32
	for b.Loop() {
		s, err := ShardID(key, 32)
		if err != nil {
			b.Fatal(err)
		}
		sink += s
	}
	_ = sink
}

func benchGroups(n, shards int) []Group {
	groups := make([]Group, n)
	for i := range groups {
		groups[i] = Group{Name: fmt.Sprintf("group-%03d", i), ShardNum: uint32(shards), Replicas: 1}
	}
	return groups
}

func benchNodes(n int) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprintf("data-%02d", i), Addr: fmt.Sprintf("10.0.0.%d:17912", i)}
	}
	return nodes
}

// BenchmarkLookup is the write path per series: load the table, hash the
// key to a shard, read the shard's nodes.
func BenchmarkLookup(b *testing.B) {
	r := NewRouter()
	if _, err := r.Update(benchNodes(10), benchGroups(100, 32)); err != nil {
		b.Fatal(err)
	}
	key, _ := AppendSeriesKey(nil, "service_instance_cpm", []EntityValue{StrValue("service-a"), StrValue("instance-1")})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Current().Locate("group-042", key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookupParallel(b *testing.B) {
	r := NewRouter()
	if _, err := r.Update(benchNodes(10), benchGroups(100, 32)); err != nil {
		b.Fatal(err)
	}
	key, _ := AppendSeriesKey(nil, "service_instance_cpm", []EntityValue{StrValue("service-a"), StrValue("instance-1")})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := r.Current().Locate("group-042", key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkOrder(b *testing.B) {
	tb, err := NewTable(1, benchNodes(10), benchGroups(1, 32))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tb.Order("group-000", 7); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildTable(b *testing.B) {
	for _, bc := range []struct {
		groups, shards, nodes int
		weighted              bool
	}{
		{100, 32, 10, false},
		{100, 32, 10, true},
		{10, 256, 50, false},
	} {
		name := fmt.Sprintf("groups=%d/shards=%d/nodes=%d/weighted=%v", bc.groups, bc.shards, bc.nodes, bc.weighted)
		b.Run(name, func(b *testing.B) {
			nodes, groups := benchNodes(bc.nodes), benchGroups(bc.groups, bc.shards)
			if bc.weighted {
				for i := range nodes {
					nodes[i].Weight = uint32(1 + i%3)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewTable(1, nodes, groups); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
