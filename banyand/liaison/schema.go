package liaison

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/route"
)

type nameKey struct{ group, name string }

// schemaSnapshot is an immutable view of the schema: the write path reads
// it without locks; the watcher builds the next one and swaps it in.
type schemaSnapshot struct {
	rev      int64
	groups   map[string]*commonv1.Group
	streams  map[nameKey]*streamLayout
	measures map[nameKey]*measureLayout
}

// SchemaCache follows a registry watch (it is a registry.Handler) and
// serves lock-free lookups to the write and query paths. onGroups, when set,
// is called with the group list after every change, serially.
type SchemaCache struct {
	logger   *slog.Logger
	onGroups func([]route.Group)
	cur      atomic.Pointer[schemaSnapshot]
	ready    chan struct{}
	once     sync.Once

	// changed is closed and replaced after every rebuild, waking WaitRevision.
	changedMu sync.Mutex
	changed   chan struct{}

	// objects is the watcher's own copy of the store; only the watch
	// goroutine touches it (Handler calls are serial).
	objects map[registry.Key]registry.Object
}

// NewSchemaCache returns an empty cache; Ready is closed after the first Reset.
func NewSchemaCache(logger *slog.Logger, onGroups func([]route.Group)) *SchemaCache {
	c := &SchemaCache{logger: logger, onGroups: onGroups, ready: make(chan struct{}), changed: make(chan struct{}), objects: map[registry.Key]registry.Object{}}
	c.cur.Store(&schemaSnapshot{groups: map[string]*commonv1.Group{}, streams: map[nameKey]*streamLayout{}, measures: map[nameKey]*measureLayout{}})
	return c
}

// Ready is closed once the cache holds a full snapshot of the registry.
func (c *SchemaCache) Ready() <-chan struct{} { return c.ready }

// Reset implements registry.Handler.
func (c *SchemaCache) Reset(objs []registry.Object, rev int64) {
	c.objects = make(map[registry.Key]registry.Object, len(objs))
	for _, o := range objs {
		c.objects[o.Key] = o
	}
	c.rebuild(rev)
	c.once.Do(func() { close(c.ready) })
}

// Apply implements registry.Handler.
func (c *SchemaCache) Apply(rev int64, events []registry.Event) {
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
// and small, so rebuilding everything keeps the logic obviously right.
func (c *SchemaCache) rebuild(rev int64) {
	s := &schemaSnapshot{
		rev:      rev,
		groups:   map[string]*commonv1.Group{},
		streams:  map[nameKey]*streamLayout{},
		measures: map[nameKey]*measureLayout{},
	}
	for k, o := range c.objects {
		if g, ok := o.Message.(*commonv1.Group); ok && k.Kind == registry.KindGroup {
			s.groups[k.Name] = g
		}
	}
	for k, o := range c.objects {
		g := s.groups[k.Group]
		var err error
		switch m := o.Message.(type) {
		case *databasev1.Stream:
			if g == nil {
				continue
			}
			var l *streamLayout
			if l, err = newStreamLayout(g, m); err == nil {
				s.streams[nameKey{k.Group, k.Name}] = l
			}
		case *databasev1.Measure:
			if g == nil {
				continue
			}
			var l *measureLayout
			if l, err = newMeasureLayout(g, m); err == nil {
				s.measures[nameKey{k.Group, k.Name}] = l
			}
		}
		if err != nil {
			c.logger.Warn("schema object unusable for writes; skipped", "key", k, "error", err)
		}
	}
	c.cur.Store(s)
	if c.onGroups != nil {
		c.onGroups(routeGroups(s.groups))
	}
	c.changedMu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.changedMu.Unlock()
}

// WaitRevision waits until the cache reflects registry revision rev, so a
// client that created a schema through this process can write with it at
// once (read-your-writes), or until ctx is done.
func (c *SchemaCache) WaitRevision(ctx context.Context, rev int64) error {
	for {
		c.changedMu.Lock()
		ch := c.changed
		c.changedMu.Unlock()
		if c.snapshot().rev >= rev {
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

func (c *SchemaCache) snapshot() *schemaSnapshot { return c.cur.Load() }

// Placement keeps the router's table in step with the live data nodes and
// the groups. Both watchers call into it; updates are serialised here, the
// hot path reads the router's snapshot without locks.
type Placement struct {
	logger *slog.Logger
	router *route.Router

	mu     sync.Mutex
	nodes  []route.Node
	groups []route.Group
}

// NewPlacement returns a placement updater for router.
func NewPlacement(logger *slog.Logger, router *route.Router) *Placement {
	return &Placement{logger: logger, router: router}
}

// SetGroups is the schema side's callback.
func (p *Placement) SetGroups(groups []route.Group) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups = groups
	p.update()
}

// SetNodes is the node watcher's side.
func (p *Placement) SetNodes(nodes []route.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes = nodes
	p.update()
}

func (p *Placement) update() {
	t, err := p.router.Update(p.nodes, p.groups)
	if err != nil {
		p.logger.Error("placement not updated; keeping the previous table", "error", err)
		return
	}
	p.logger.Debug("placement updated", "version", t.Version(), "nodes", len(p.nodes), "groups", len(p.groups))
}

// SegmentInterval is the group's resource_opts.segment_interval, 0 when the
// group or its interval is unknown. It lets the storage engine read group
// options from the same cache in standalone mode.
func (c *SchemaCache) SegmentInterval(group string) time.Duration {
	g := c.snapshot().groups[group]
	d, _ := storage.IntervalDuration(g.GetResourceOpts().GetSegmentInterval())
	return d
}

// TTLs is each group's resource_opts.ttl, for the groups that have one:
// what the storage engine's retention drops past.
func (c *SchemaCache) TTLs() map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, g := range c.snapshot().groups {
		if d, ok := storage.IntervalDuration(g.GetResourceOpts().GetTtl()); ok {
			out[name] = d
		}
	}
	return out
}

// Size counts the groups, streams and measures of the current snapshot,
// for metrics.
func (c *SchemaCache) Size() (groups, streams, measures int) {
	s := c.snapshot()
	return len(s.groups), len(s.streams), len(s.measures)
}
