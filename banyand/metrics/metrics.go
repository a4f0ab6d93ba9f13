// Package metrics defines the Prometheus metrics of banyand's roles, each
// role's set registered on the role's own registry (the one its /metrics
// serves) by one function per role, which Catalog also calls:
// docs/operation/metrics.md is generated from it.
package metrics

import (
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/banyand-io/banyand/banyand/handoff"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
)

// NewRegistry is a role's metrics registry, with the Go runtime and
// process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// LiaisonSources are what a liaison's metrics read.
type LiaisonSources struct {
	PubStats  func() pub.Stats
	PubBatch  *PublisherObserver
	MaxBytes  int64
	Schema    SchemaStore
	Cache     SchemaSizer
	NodeWatch func() etcd.NodeWatcherStats
	Security  prometheus.Collector // the role's security.Metrics
}

// Role are the registered metrics a role's components update.
type Role struct {
	Writes    *WriteCounters // nil on storage
	Listeners *Listeners     // nil on liaison
	GRPC      *grpcprom.ServerMetrics
	// RegistryEvents counts the registry changes the role applied, by
	// registry ("schema", "node") and type.
	RegistryEvents *prometheus.CounterVec
	// PartialAnswers counts queries a liaison answered without a data
	// node holding their data (--query-partial-answers); nil elsewhere.
	PartialAnswers prometheus.Counter
}

func newRegistryEvents(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "banyand_registry_events_total",
		Help: "Registry changes applied, by registry (schema: put/delete of groups, streams, measures; node: data nodes joining, leaving, changing).",
	}, []string{"registry", "type"})
	reg.MustRegister(c)
	return c
}

// RegisterLiaison registers a liaison's metrics on reg.
func RegisterLiaison(reg prometheus.Registerer, src LiaisonSources) Role {
	m := Role{Writes: NewWriteCounters(reg), GRPC: newGRPCMetrics(reg), RegistryEvents: newRegistryEvents(reg),
		PartialAnswers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "banyand_liaison_partial_query_answers_total",
			Help: "Queries answered OK without a data node that holds data of their groups (only with --query-partial-answers; otherwise they fail UNAVAILABLE).",
		})}
	reg.MustRegister(m.PartialAnswers, newPublisherCollector(src.PubStats, src.MaxBytes), src.PubBatch)
	registerSchemaMetrics(reg, src.Schema, src.Cache)
	counterFunc(reg, "banyand_registry_node_watch_skipped_total", "Node registry entries skipped as invalid, each time read.",
		func() int64 { return src.NodeWatch().Skipped })
	counterFunc(reg, "banyand_registry_node_watch_relists_total", "Node watch re-lists after the first list.",
		func() int64 { return src.NodeWatch().Relists })
	reg.MustRegister(src.Security)
	return m
}

// StorageSources are what a data node's metrics read.
type StorageSources struct {
	Schema    SchemaStore
	Cache     SchemaSizer
	Registrar func() etcd.NodeRegistrarStats
	Security  prometheus.Collector            // the role's security.Metrics
	Engine    func() (tsdb.EngineStats, bool) // false while the store is not open
	Handoff   func() handoff.Stats
}

// RegisterStorage registers a data node's metrics on reg.
func RegisterStorage(reg prometheus.Registerer, src StorageSources) Role {
	registerSchemaMetrics(reg, src.Schema, src.Cache)
	counterFunc(reg, "banyand_registry_node_registrations_total", "Writes of this node's registration key, re-registrations included.",
		func() int64 { return src.Registrar().Registrations })
	counterFunc(reg, "banyand_registry_node_renewals_total", "Keep-alive responses for this node's lease.",
		func() int64 { return src.Registrar().Renewals })
	counterFunc(reg, "banyand_registry_node_losses_total", "Leases of this node lost while registered.",
		func() int64 { return src.Registrar().Losses })
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "banyand_handoff_pending_hints",
		Help: "Writes acked with fewer copies than their group's replicas whose hints this node keeps: the repair backlog; 0 once every copy was made."},
		func() float64 { return float64(src.Handoff().Pending) }))
	counterFunc(reg, "banyand_handoff_received_hints_total", "Hints this node took: writes acked with fewer copies than their group's replicas.",
		func() int64 { return src.Handoff().Received })
	counterFunc(reg, "banyand_handoff_delivered_hints_total", "Hints handed off: their writes acked by every node of their shard's placement.",
		func() int64 { return src.Handoff().Delivered })
	counterFunc(reg, "banyand_handoff_dropped_hints_total", "Hints dropped because a data node refused their write as invalid: copies never made.",
		func() int64 { return src.Handoff().Dropped })
	reg.MustRegister(src.Security, newEngineCollector(src.Engine))
	return Role{Listeners: newListeners(reg), RegistryEvents: newRegistryEvents(reg)}
}

// StandaloneSources are what a standalone's metrics read.
type StandaloneSources struct {
	Schema   SchemaStore
	Cache    SchemaSizer
	Security prometheus.Collector            // the role's security.Metrics
	Engine   func() (tsdb.EngineStats, bool) // false while the store is not open
}

// RegisterStandalone registers a standalone's metrics on reg.
func RegisterStandalone(reg prometheus.Registerer, src StandaloneSources) Role {
	m := Role{Writes: NewWriteCounters(reg), GRPC: newGRPCMetrics(reg), RegistryEvents: newRegistryEvents(reg)}
	registerSchemaMetrics(reg, src.Schema, src.Cache)
	m.Listeners = newListeners(reg)
	reg.MustRegister(src.Security, newEngineCollector(src.Engine))
	return m
}

// SchemaStore is what the schema registries (etcd, local) count.
type SchemaStore interface {
	Resyncs() uint64
	Skipped() uint64
}

// SchemaSizer is the schema cache, as its size gauges read it.
type SchemaSizer interface {
	Size() (groups, streams, measures int)
}

func registerSchemaMetrics(reg prometheus.Registerer, store SchemaStore, cache SchemaSizer) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "banyand_registry_schema_resyncs_total", Help: "Schema watch re-lists (compaction, slow watcher, lost watch).",
		}, func() float64 { return float64(store.Resyncs()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "banyand_registry_schema_skipped_total", Help: "Schema registry entries skipped as unreadable, each time read.",
		}, func() float64 { return float64(store.Skipped()) }),
	)
	size := func(pick func(g, s, m int) int) func() float64 {
		return func() float64 { return float64(pick(cache.Size())) }
	}
	for _, k := range []struct {
		kind string
		pick func(g, s, m int) int
	}{
		{"group", func(g, _, _ int) int { return g }},
		{"stream", func(_, s, _ int) int { return s }},
		{"measure", func(_, _, m int) int { return m }},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "banyand_schema_cache_objects", Help: "Schema objects in the cache, by kind.",
			ConstLabels: prometheus.Labels{"kind": k.kind},
		}, size(k.pick)))
	}
}

func counterFunc(reg prometheus.Registerer, name, help string, f func() int64) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
		func() float64 { return float64(f()) }))
}
