package schema

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/route"
)

// Key names a member of a group: a stream, measure, index rule, ...
type Key struct{ Group, Name string }

// Snapshot is an immutable view of the schema. Readers hold on to one
// without locks; the cache builds the next one and swaps it in.
type Snapshot struct {
	Rev               int64
	Groups            map[string]*commonv1.Group
	Streams           map[Key]*databasev1.Stream
	Measures          map[Key]*databasev1.Measure
	IndexRules        map[Key]*databasev1.IndexRule
	IndexRuleBindings map[Key]*databasev1.IndexRuleBinding
	TopNAggregations  map[Key]*databasev1.TopNAggregation
	Traces            map[Key]*databasev1.Trace
	Properties        map[Key]*databasev1.Property
}

func newSnapshot(rev int64) *Snapshot {
	return &Snapshot{
		Rev:               rev,
		Groups:            map[string]*commonv1.Group{},
		Streams:           map[Key]*databasev1.Stream{},
		Measures:          map[Key]*databasev1.Measure{},
		IndexRules:        map[Key]*databasev1.IndexRule{},
		IndexRuleBindings: map[Key]*databasev1.IndexRuleBinding{},
		TopNAggregations:  map[Key]*databasev1.TopNAggregation{},
		Traces:            map[Key]*databasev1.Trace{},
		Properties:        map[Key]*databasev1.Property{},
	}
}

// Cache follows a registry watch (it is a registry.Handler) and serves
// lock-free snapshots. onGroups, when set, is called with the group list
// after every change, serially (the liaison's placement follows it).
type Cache struct {
	onGroups func([]route.Group)
	cur      atomic.Pointer[Snapshot]
	ready    chan struct{}
	once     sync.Once

	// changed is closed and replaced after every rebuild, waking WaitRevision.
	changedMu sync.Mutex
	changed   chan struct{}

	// objects is the watcher's own copy of the store; only the watch
	// goroutine touches it (Handler calls are serial).
	objects map[registry.Key]registry.Object
}

// NewCache returns an empty cache; Ready is closed after the first Reset.
func NewCache(onGroups func([]route.Group)) *Cache {
	c := &Cache{onGroups: onGroups, ready: make(chan struct{}), changed: make(chan struct{}), objects: map[registry.Key]registry.Object{}}
	c.cur.Store(newSnapshot(0))
	return c
}

// Ready is closed once the cache holds a full snapshot of the registry.
func (c *Cache) Ready() <-chan struct{} { return c.ready }

// Current is the snapshot in force.
func (c *Cache) Current() *Snapshot { return c.cur.Load() }

// Reset implements registry.Handler.
func (c *Cache) Reset(objs []registry.Object, rev int64) {
	c.objects = make(map[registry.Key]registry.Object, len(objs))
	for _, o := range objs {
		c.objects[o.Key] = o
	}
	c.rebuild(rev)
	c.once.Do(func() { close(c.ready) })
}

// Apply implements registry.Handler.
func (c *Cache) Apply(rev int64, events []registry.Event) {
	for _, ev := range events {
		switch ev.Type {
		case registry.EventPut:
			c.objects[ev.Object.Key] = ev.Object
		case registry.EventDelete:
			delete(c.objects, ev.Object.Key)
		}
	}
	c.rebuild(rev)
}

// rebuild derives a new snapshot from the objects. Schema changes are rare
// and small, so rebuilding everything keeps the logic obviously right. A
// member whose group is not there yet is left out.
func (c *Cache) rebuild(rev int64) {
	s := newSnapshot(rev)
	for k, o := range c.objects {
		if g, ok := o.Message.(*commonv1.Group); ok && k.Kind == registry.KindGroup {
			s.Groups[k.Name] = g
		}
	}
	for k, o := range c.objects {
		if s.Groups[k.Group] == nil {
			continue
		}
		key := Key{k.Group, k.Name}
		switch m := o.Message.(type) {
		case *databasev1.Stream:
			s.Streams[key] = m
		case *databasev1.Measure:
			s.Measures[key] = m
		case *databasev1.IndexRule:
			s.IndexRules[key] = m
		case *databasev1.IndexRuleBinding:
			s.IndexRuleBindings[key] = m
		case *databasev1.TopNAggregation:
			s.TopNAggregations[key] = m
		case *databasev1.Trace:
			s.Traces[key] = m
		case *databasev1.Property:
			s.Properties[key] = m
		}
	}
	c.cur.Store(s)
	if c.onGroups != nil {
		c.onGroups(routeGroups(s.Groups))
	}
	c.changedMu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.changedMu.Unlock()
}

// WaitRevision waits until the cache reflects registry revision rev, so a
// client that created a schema through this process can use it at once
// (read-your-writes), or until ctx is done.
func (c *Cache) WaitRevision(ctx context.Context, rev int64) error {
	for {
		c.changedMu.Lock()
		ch := c.changed
		c.changedMu.Unlock()
		if c.Current().Rev >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func routeGroups(groups map[string]*commonv1.Group) []route.Group {
	out := make([]route.Group, 0, len(groups))
	for name, g := range groups {
		ro := g.GetResourceOpts()
		if ro.GetShardNum() == 0 || ro.GetShardNum() > route.MaxShardNum {
			continue
		}
		out = append(out, route.Group{Name: name, ShardNum: ro.GetShardNum(), Replicas: ro.GetReplicas()})
	}
	return out
}

// SegmentInterval is the group's resource_opts.segment_interval, 0 when the
// group or its interval is unknown: the storage engine's group options.
func (c *Cache) SegmentInterval(group string) time.Duration {
	g := c.Current().Groups[group]
	d, _ := IntervalDuration(g.GetResourceOpts().GetSegmentInterval())
	return d
}

// TTLs is each group's resource_opts.ttl, for the groups that have one:
// what the storage engine's retention drops past.
func (c *Cache) TTLs() map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, g := range c.Current().Groups {
		if d, ok := IntervalDuration(g.GetResourceOpts().GetTtl()); ok {
			out[name] = d
		}
	}
	return out
}

// Size counts the groups, streams and measures of the current snapshot,
// for metrics.
func (c *Cache) Size() (groups, streams, measures int) {
	s := c.Current()
	return len(s.Groups), len(s.Streams), len(s.Measures)
}
