package schema

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/route"
)

func TestIntervalDuration(t *testing.T) {
	for _, tc := range []struct {
		unit commonv1.IntervalRule_Unit
		num  uint32
		want time.Duration
		ok   bool
	}{
		{commonv1.IntervalRule_UNIT_HOUR, 6, 6 * time.Hour, true},
		{commonv1.IntervalRule_UNIT_DAY, 7, 7 * 24 * time.Hour, true},
		{commonv1.IntervalRule_UNIT_DAY, 0, 0, false},
		{commonv1.IntervalRule_UNIT_UNSPECIFIED, 3, 0, false},
	} {
		got, ok := IntervalDuration(&commonv1.IntervalRule{Unit: tc.unit, Num: tc.num})
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v×%d: %v %v, want %v %v", tc.unit, tc.num, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := IntervalDuration(nil); ok {
		t.Error("nil rule is ok")
	}
}

func object(t *testing.T, rev int64, m proto.Message) registry.Object {
	t.Helper()
	k, err := registry.KeyOf(m)
	if err != nil {
		t.Fatal(err)
	}
	return registry.Object{Key: k, Revision: rev, Message: m}
}

// TestCacheFollowsTheRegistry: snapshots hold what the watch delivered,
// a stream whose group is missing is left out, the group list reaches
// onGroups, and WaitRevision returns once a revision is in.
func TestCacheFollowsTheRegistry(t *testing.T) {
	var groups []route.Group
	c := NewCache(func(g []route.Group) { groups = g })
	group := &commonv1.Group{Metadata: &commonv1.Metadata{Name: "g"}, Catalog: commonv1.Catalog_CATALOG_STREAM,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 2, SegmentInterval: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1},
			Ttl: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_HOUR, Num: 3}}}
	stream := &databasev1.Stream{Metadata: &commonv1.Metadata{Group: "g", Name: "s"}}
	orphan := &databasev1.Stream{Metadata: &commonv1.Metadata{Group: "other", Name: "s"}}
	rule := &databasev1.IndexRule{Metadata: &commonv1.Metadata{Group: "g", Name: "r"}}
	binding := &databasev1.IndexRuleBinding{Metadata: &commonv1.Metadata{Group: "g", Name: "s"}}
	select {
	case <-c.Ready():
		t.Fatal("ready before the first snapshot")
	default:
	}
	c.Reset([]registry.Object{object(t, 1, group), object(t, 2, stream), object(t, 2, orphan), object(t, 2, rule), object(t, 2, binding)}, 2)
	<-c.Ready()
	s := c.Current()
	if s.Rev != 2 || s.Groups["g"] == nil || s.Streams[Key{Group: "g", Name: "s"}] == nil || len(s.Streams) != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	if s.IndexRules[Key{Group: "g", Name: "r"}] != rule || s.IndexRuleBindings[Key{Group: "g", Name: "s"}] != binding {
		t.Fatalf("snapshot rules %v, bindings %v", s.IndexRules, s.IndexRuleBindings)
	}
	if len(groups) != 1 || groups[0] != (route.Group{Name: "g", ShardNum: 2}) {
		t.Errorf("onGroups got %v", groups)
	}
	if c.SegmentInterval("g") != 24*time.Hour || c.TTLs()["g"] != 3*time.Hour || c.SegmentInterval("nope") != 0 {
		t.Errorf("group options: %v %v", c.SegmentInterval("g"), c.TTLs())
	}
	done := make(chan error, 1)
	go func() { done <- c.WaitRevision(context.Background(), 3) }()
	c.Apply(3, []registry.Event{{Type: registry.EventDelete, Object: object(t, 3, stream)}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g, st, m := c.Size(); g != 1 || st != 0 || m != 0 {
		t.Errorf("size after delete: %d %d %d", g, st, m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitRevision(ctx, 9); err == nil {
		t.Error("WaitRevision for a revision never seen returned nil")
	}
}

func TestCheckQueryWindow(t *testing.T) {
	for _, c := range []struct {
		offset, limit uint32
		ok            bool
	}{
		{0, 0, true}, {0, MaxQueryWindow, true}, {10_000, 90_000, true},
		{1, MaxQueryWindow, false}, {0, 1<<32 - 1, false}, {1<<32 - 1, 1<<32 - 1, false},
	} {
		if err := CheckQueryWindow(c.offset, c.limit); (err == nil) != c.ok {
			t.Errorf("CheckQueryWindow(%d, %d) = %v, want ok %v", c.offset, c.limit, err, c.ok)
		}
	}
}
