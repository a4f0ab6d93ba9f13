package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
)

// Listeners count what reaches the store's listeners.
type Listeners struct {
	messages, batches *prometheus.CounterVec
	failures          *prometheus.CounterVec
	commit            *prometheus.HistogramVec
	bytes             *prometheus.CounterVec
}

func newListeners(reg prometheus.Registerer) *Listeners {
	m := &Listeners{
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
func (m *Listeners) wrap(topic queue.Topic, l queue.Listener) queue.Listener {
	t := string(topic)
	cl := &countingListener{
		inner: l, messages: m.messages.WithLabelValues(t), batches: m.batches.WithLabelValues(t),
		failures: m.failures.MustCurryWith(prometheus.Labels{"topic": t}),
	}
	if topic == queue.TopicStreamWrite || topic == queue.TopicMeasureWrite || topic == queue.TopicPropertyWrite || topic == queue.TopicTraceWrite {
		cl.commit, cl.bytes = m.commit.WithLabelValues(t), m.bytes.WithLabelValues(t)
	}
	return cl
}

// Subscribe registers store's listeners with srv, each counted.
func (m *Listeners) Subscribe(srv queue.Server, listeners map[queue.Topic]queue.Listener) error {
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
