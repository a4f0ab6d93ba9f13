package roles

import (
	"context"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/queue/sub"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
)

// The metrics of the roles, all registered on the role's own registry (the
// one its /metrics serves) by one function per role, which MetricCatalog
// also calls: docs/operation/metrics.md is generated from it.

// liaisonSources are what a liaison's metrics read.
type liaisonSources struct {
	pubStats  func() pub.Stats
	pubBatch  *publisherObserver
	maxBytes  int64
	schema    schemaStore
	cache     *liaison.SchemaCache
	nodeWatch func() etcd.NodeWatcherStats
	security  *securityMetrics
}

// roleMetrics are the registered metrics a role's components update.
type roleMetrics struct {
	writes    *writeCounters   // nil on storage
	listeners *listenerMetrics // nil on liaison
	grpc      *grpcprom.ServerMetrics
	// registryEvents counts the registry changes the role applied, by
	// registry ("schema", "node") and type.
	registryEvents *prometheus.CounterVec
}

func newRegistryEvents(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "banyand_registry_events_total",
		Help: "Registry changes applied, by registry (schema: put/delete of groups, streams, measures; node: data nodes joining, leaving, changing).",
	}, []string{"registry", "type"})
	reg.MustRegister(c)
	return c
}

func registerLiaisonMetrics(reg prometheus.Registerer, src liaisonSources) roleMetrics {
	m := roleMetrics{writes: newWriteCounters(reg), grpc: newGRPCMetrics(reg), registryEvents: newRegistryEvents(reg)}
	reg.MustRegister(newPublisherCollector(src.pubStats, src.maxBytes), src.pubBatch)
	registerSchemaMetrics(reg, src.schema, src.cache)
	counterFunc(reg, "banyand_registry_node_watch_skipped_total", "Node registry entries skipped as invalid, each time read.",
		func() int64 { return src.nodeWatch().Skipped })
	counterFunc(reg, "banyand_registry_node_watch_relists_total", "Node watch re-lists after the first list.",
		func() int64 { return src.nodeWatch().Relists })
	reg.MustRegister(src.security)
	return m
}

// storageSources are what a data node's metrics read.
type storageSources struct {
	schema    schemaStore
	cache     *liaison.SchemaCache
	registrar func() etcd.NodeRegistrarStats
	security  *securityMetrics
	engine    func() (tsdb.EngineStats, bool) // false while the store is not open
}

func registerStorageMetrics(reg prometheus.Registerer, src storageSources) roleMetrics {
	registerSchemaMetrics(reg, src.schema, src.cache)
	counterFunc(reg, "banyand_registry_node_registrations_total", "Writes of this node's registration key, re-registrations included.",
		func() int64 { return src.registrar().Registrations })
	counterFunc(reg, "banyand_registry_node_renewals_total", "Keep-alive responses for this node's lease.",
		func() int64 { return src.registrar().Renewals })
	counterFunc(reg, "banyand_registry_node_losses_total", "Leases of this node lost while registered.",
		func() int64 { return src.registrar().Losses })
	reg.MustRegister(src.security, newEngineCollector(src.engine))
	return roleMetrics{listeners: newListenerMetrics(reg), registryEvents: newRegistryEvents(reg)}
}

// standaloneSources are what a standalone's metrics read.
type standaloneSources struct {
	schema   schemaStore
	cache    *liaison.SchemaCache
	security *securityMetrics
	engine   func() (tsdb.EngineStats, bool) // false while the store is not open
}

func registerStandaloneMetrics(reg prometheus.Registerer, src standaloneSources) roleMetrics {
	m := roleMetrics{writes: newWriteCounters(reg), grpc: newGRPCMetrics(reg), registryEvents: newRegistryEvents(reg)}
	registerSchemaMetrics(reg, src.schema, src.cache)
	m.listeners = newListenerMetrics(reg)
	reg.MustRegister(src.security, newEngineCollector(src.engine))
	return m
}

// writeCounters backs liaison.WriteCounters with Prometheus counters.
type writeCounters struct {
	received *prometheus.CounterVec
	answered *prometheus.CounterVec
}

func newWriteCounters(reg prometheus.Registerer) *writeCounters {
	c := &writeCounters{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_liaison_writes_received_total",
			Help: "Client write messages received, by group and kind (stream, measure).",
		}, []string{"group", "kind"}),
		answered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_liaison_writes_answered_total",
			Help: "Client write messages answered, by group, kind and the status sent.",
		}, []string{"group", "kind", "status"}),
	}
	reg.MustRegister(c.received, c.answered)
	return c
}

func (c *writeCounters) Received(group, kind string) liaison.Counter {
	return c.received.WithLabelValues(group, kind)
}

func (c *writeCounters) Answered(group, kind string, st modelv1.Status) liaison.Counter {
	return c.answered.WithLabelValues(group, kind, st.String())
}

// publisherCollector reads the publisher's stats once per scrape.
type publisherCollector struct {
	stats    func() pub.Stats
	maxBytes int64

	nodeInflight, nodeBytes, nodeDown, bytes, bound          *prometheus.Desc
	reconnects, replaced, batches, messages, underReplicated *prometheus.Desc
	waitingForNodes                                          *prometheus.Desc
}

func newPublisherCollector(stats func() pub.Stats, maxBytesPerNode int64) *publisherCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("banyand_publisher_"+name, help, labels, nil)
	}
	return &publisherCollector{
		stats: stats, maxBytes: maxBytesPerNode,
		nodeInflight:    d("node_inflight_batches", "Batches sent to a data node and not yet acked.", "node"),
		nodeBytes:       d("node_bytes_in_use", "Payload bytes queued for or in flight to a data node.", "node"),
		nodeDown:        d("node_down", "1 while a data node is routed around.", "node"),
		bytes:           d("bytes_in_use", "Payload bytes queued or in flight, all data nodes."),
		bound:           d("max_bytes_per_node", "Bound on a data node's bytes in use; Publish blocks beyond it."),
		reconnects:      d("reconnects_total", "Streams to data nodes re-opened after a break."),
		replaced:        d("replaced_messages_total", "Messages moved to another data node than the one they were queued for."),
		batches:         d("batches_sent_total", "Batches written to data nodes, resends included."),
		messages:        d("messages_sent_total", "Messages written to data nodes, resends included."),
		underReplicated: d("under_replicated_copies_total", "Copies of replicated writes not written for want of live data nodes."),
		waitingForNodes: d("waiting_for_nodes", "Writes held because no data node is registered, for at most --queue-retry-budget after the last one left."),
	}
}

func (c *publisherCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.nodeInflight, c.nodeBytes, c.nodeDown, c.bytes, c.bound,
		c.reconnects, c.replaced, c.batches, c.messages, c.underReplicated, c.waitingForNodes} {
		ch <- d
	}
}

func (c *publisherCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, n := range st.Nodes {
		down := 0.0
		if n.Down {
			down = 1
		}
		ch <- prometheus.MustNewConstMetric(c.nodeInflight, prometheus.GaugeValue, float64(n.InFlightBatches), n.Name)
		ch <- prometheus.MustNewConstMetric(c.nodeBytes, prometheus.GaugeValue, float64(n.BytesInUse), n.Name)
		ch <- prometheus.MustNewConstMetric(c.nodeDown, prometheus.GaugeValue, down, n.Name)
	}
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(st.BytesInUse))
	ch <- prometheus.MustNewConstMetric(c.bound, prometheus.GaugeValue, float64(c.maxBytes))
	ch <- prometheus.MustNewConstMetric(c.reconnects, prometheus.CounterValue, float64(st.Reconnects))
	ch <- prometheus.MustNewConstMetric(c.replaced, prometheus.CounterValue, float64(st.Replaced))
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(st.BatchesSent))
	ch <- prometheus.MustNewConstMetric(c.messages, prometheus.CounterValue, float64(st.MessagesSent))
	ch <- prometheus.MustNewConstMetric(c.underReplicated, prometheus.CounterValue, float64(st.UnderReplicated))
	ch <- prometheus.MustNewConstMetric(c.waitingForNodes, prometheus.GaugeValue, float64(st.AwaitingNodes+st.WaitingMessages))
}

// listenerMetrics count what reaches the store's listeners.
type listenerMetrics struct {
	messages, batches *prometheus.CounterVec
	failures          *prometheus.CounterVec
	commit            *prometheus.HistogramVec
	bytes             *prometheus.CounterVec
}

func newListenerMetrics(reg prometheus.Registerer) *listenerMetrics {
	m := &listenerMetrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_subscriber_messages_received_total", Help: "Messages handed to the store, by topic.",
		}, []string{"topic"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_subscriber_batches_received_total", Help: "Batches handed to the store, by topic.",
		}, []string{"topic"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_subscriber_failures_total", Help: "Messages the store failed, by topic and the cluster-protocol code acked.",
		}, []string{"topic", "code"}),
		commit: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "banyand_storage_commit_duration_seconds", Help: "Time to write and sync one batch of a write topic.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"topic"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_storage_written_bytes_total", Help: "Payload bytes of the write batches committed, by topic.",
		}, []string{"topic"}),
	}
	reg.MustRegister(m.messages, m.batches, m.failures, m.commit, m.bytes)
	return m
}

// wrap counts l's batches of topic; write topics are timed too.
func (m *listenerMetrics) wrap(topic queue.Topic, l queue.Listener) queue.Listener {
	t := string(topic)
	cl := &countingListener{
		inner: l, messages: m.messages.WithLabelValues(t), batches: m.batches.WithLabelValues(t),
		failures: m.failures.MustCurryWith(prometheus.Labels{"topic": t}),
	}
	if topic == queue.TopicStreamWrite || topic == queue.TopicMeasureWrite {
		cl.commit, cl.bytes = m.commit.WithLabelValues(t), m.bytes.WithLabelValues(t)
	}
	return cl
}

// subscribe registers store's listeners with srv, each counted.
func (m *listenerMetrics) subscribe(srv queue.Server, listeners map[queue.Topic]queue.Listener) error {
	for topic, l := range listeners {
		if err := srv.Subscribe(topic, m.wrap(topic, l)); err != nil {
			return err
		}
	}
	return nil
}

type countingListener struct {
	inner             queue.Listener
	messages, batches prometheus.Counter
	failures          *prometheus.CounterVec
	commit            prometheus.Observer // nil unless a write topic
	bytes             prometheus.Counter
}

func (l *countingListener) Handle(ctx context.Context, b queue.Batch) queue.Result {
	l.batches.Inc()
	l.messages.Add(float64(len(b.Messages)))
	if l.commit == nil {
		res := l.inner.Handle(ctx, b)
		l.countFailures(res)
		return res
	}
	start := time.Now()
	res := l.inner.Handle(ctx, b)
	l.commit.Observe(time.Since(start).Seconds())
	n := 0
	for i, m := range b.Messages {
		if i >= len(res.Errs) || res.Errs[i] == nil {
			n += len(m)
		}
	}
	l.bytes.Add(float64(n))
	l.countFailures(res)
	return res
}

func (l *countingListener) countFailures(res queue.Result) {
	for _, err := range res.Errs {
		if err != nil {
			l.failures.WithLabelValues(sub.CodeOf(err).String()).Inc()
		}
	}
}

// schemaStore is what the schema registries (etcd, local) count.
type schemaStore interface {
	Resyncs() uint64
	Skipped() uint64
}

func registerSchemaMetrics(reg prometheus.Registerer, store schemaStore, cache *liaison.SchemaCache) {
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

// newGRPCMetrics are the metrics of a client-facing gRPC server.
func newGRPCMetrics(reg prometheus.Registerer) *grpcprom.ServerMetrics {
	m := grpcprom.NewServerMetrics(grpcprom.WithServerCounterOptions(grpcprom.WithNamespace("banyand")))
	reg.MustRegister(m)
	return m
}

// grpcServerOptions instruments a client-facing server with m; the options
// go with the server's own.
func grpcServerOptions(m *grpcprom.ServerMetrics) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(streamMetricsInterceptor(m)),
	}
}

// writeStreamMethods are the client write streams: one message per element
// or data point, counted by the write counters (banyand_client_writes_*).
var writeStreamMethods = map[string]bool{
	"/banyandb.stream.v1.StreamService/Write":   true,
	"/banyandb.measure.v1.MeasureService/Write": true,
}

// streamMetricsInterceptor is m's stream interceptor, except that a write
// stream is counted as an RPC (started, handled, by code) but its messages
// are not: per message the interceptor looks up labels and reads the clock
// twice, 4 % of the write path's CPU, for counts the write counters keep.
func streamMetricsInterceptor(m *grpcprom.ServerMetrics) grpc.StreamServerInterceptor {
	inner := m.StreamServerInterceptor()
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !writeStreamMethods[info.FullMethod] {
			return inner(srv, ss, info, handler)
		}
		return inner(srv, ss, info, func(srv any, _ grpc.ServerStream) error { return handler(srv, ss) })
	}
}

// publisherObserver is the publisher's pub.Observer: the size of the
// batches it sends and how long each takes to be acked, per data node.
type publisherObserver struct {
	batchMessages prometheus.Histogram
	ackLatency    *prometheus.HistogramVec
}

func newPublisherObserver() *publisherObserver {
	return &publisherObserver{
		batchMessages: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "banyand_publisher_batch_messages",
			Help:    "Messages per batch written to data nodes (batches grow with load: there is no linger).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 7), // 1 .. 4096
		}),
		ackLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "banyand_publisher_ack_latency_seconds",
			Help:    "Time from writing a batch to a data node to its ack (the node's synced commit included), by node.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
		}, []string{"node"}),
	}
}

func (o *publisherObserver) BatchSent(_ string, msgs int) { o.batchMessages.Observe(float64(msgs)) }

func (o *publisherObserver) BatchAcked(node string, latency time.Duration) {
	o.ackLatency.WithLabelValues(node).Observe(latency.Seconds())
}

func (o *publisherObserver) Describe(ch chan<- *prometheus.Desc) {
	o.batchMessages.Describe(ch)
	o.ackLatency.Describe(ch)
}

func (o *publisherObserver) Collect(ch chan<- prometheus.Metric) {
	o.batchMessages.Collect(ch)
	o.ackLatency.Collect(ch)
}
