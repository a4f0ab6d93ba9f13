package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/banyand-io/banyand/pkg/queue/pub"
)

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
		nodeBytes:       d("node_bytes_in_use", "Payload bytes queued for, in flight to, or taken off a data node and waiting to be re-placed; up to twice --queue-max-bytes-per-node while re-placed messages land on it.", "node"),
		nodeDown:        d("node_down", "1 while a data node is routed around.", "node"),
		bytes:           d("bytes_in_use", "Payload bytes queued, in flight or waiting to be re-placed, all data nodes."),
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

// PublisherObserver is the publisher's pub.Observer: the size of the
// batches it sends and how long each takes to be acked, per data node.
type PublisherObserver struct {
	batchMessages prometheus.Histogram
	ackLatency    *prometheus.HistogramVec
}

// NewPublisherObserver is unregistered: RegisterLiaison registers it.
func NewPublisherObserver() *PublisherObserver {
	return &PublisherObserver{
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

// BatchSent implements pub.Observer.
func (o *PublisherObserver) BatchSent(_ string, msgs int) { o.batchMessages.Observe(float64(msgs)) }

// BatchAcked implements pub.Observer.
func (o *PublisherObserver) BatchAcked(node string, latency time.Duration) {
	o.ackLatency.WithLabelValues(node).Observe(latency.Seconds())
}

func (o *PublisherObserver) Describe(ch chan<- *prometheus.Desc) {
	o.batchMessages.Describe(ch)
	o.ackLatency.Describe(ch)
}

func (o *PublisherObserver) Collect(ch chan<- prometheus.Metric) {
	o.batchMessages.Collect(ch)
	o.ackLatency.Collect(ch)
}
