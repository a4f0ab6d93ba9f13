package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/liaison"
)

// WriteCounters backs liaison.WriteCounters with Prometheus counters.
type WriteCounters struct {
	received *prometheus.CounterVec
	answered *prometheus.CounterVec
}

// NewWriteCounters registers the client write counters on reg.
func NewWriteCounters(reg prometheus.Registerer) *WriteCounters {
	c := &WriteCounters{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_liaison_writes_received_total",
			Help: "Client write messages received, by group and kind (stream, measure, trace: a span, property: an Apply or Delete).",
		}, []string{"group", "kind"}),
		answered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "banyand_liaison_writes_answered_total",
			Help: "Client write messages answered, by group, kind and the status sent.",
		}, []string{"group", "kind", "status"}),
	}
	reg.MustRegister(c.received, c.answered)
	return c
}

// Received implements liaison.WriteCounters.
func (c *WriteCounters) Received(group, kind string) liaison.Counter {
	return c.received.WithLabelValues(group, kind)
}

// Answered implements liaison.WriteCounters.
func (c *WriteCounters) Answered(group, kind string, st modelv1.Status) liaison.Counter {
	return c.answered.WithLabelValues(group, kind, st.String())
}
