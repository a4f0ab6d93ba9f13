package liaison

import (
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// Counter is one monotonic count; prometheus.Counter is one.
type Counter interface{ Inc() }

// WriteCounters hands out the counters of the client write path. Each write
// stream asks once per change of group (and per status seen), not per
// message, so an implementation may do a label lookup in each call.
type WriteCounters interface {
	// Received counts messages received for group of kind ("stream" or
	// "measure"); group is "" before a stream sent metadata.
	Received(group, kind string) Counter
	// Answered counts answers sent with status st.
	Answered(group, kind string, st modelv1.Status) Counter
}

type noCounter struct{}

func (noCounter) Inc() {}

type noWriteCounters struct{}

func (noWriteCounters) Received(string, string) Counter                 { return noCounter{} }
func (noWriteCounters) Answered(string, string, modelv1.Status) Counter { return noCounter{} }

// receivedCounter caches the Received counter of a stream's current group;
// only the receive loop uses it.
type receivedCounter struct {
	src   WriteCounters
	kind  string
	group string
	c     Counter
}

func (r *receivedCounter) inc(group string) {
	if r.c == nil || group != r.group {
		r.group, r.c = group, r.src.Received(group, r.kind)
	}
	r.c.Inc()
}

// answeredCounter caches the Answered counters of a stream's current group
// by status; only the answer loop uses it.
type answeredCounter struct {
	src      WriteCounters
	kind     string
	group    string
	byStatus map[modelv1.Status]Counter
}

func (a *answeredCounter) inc(group string, st modelv1.Status) {
	if a.byStatus == nil || group != a.group {
		a.group, a.byStatus = group, make(map[modelv1.Status]Counter, 2)
	}
	c := a.byStatus[st]
	if c == nil {
		c = a.src.Answered(group, a.kind, st)
		a.byStatus[st] = c
	}
	c.Inc()
}
