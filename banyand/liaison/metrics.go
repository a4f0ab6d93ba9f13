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

// unknownGroup is the group label of writes that name a group the schema
// does not hold: labels come from client input, and a client that sends
// garbage group names must not grow the series without bound.
const unknownGroup = "_unknown"

// groupLabel returns the label a write to group counts under, and whether
// it is final: an unknown group is looked up again on its next write, in
// case it has been created since.
type groupLabel func(group string) (label string, final bool)

// labelBySchema labels a group by itself when schema holds it.
func labelBySchema(schema *layouts) groupLabel {
	return func(group string) (string, bool) {
		if group == "" || schema.snapshot().src.Groups[group] != nil {
			return group, true
		}
		return unknownGroup, false
	}
}

// notAGroup never equals a group name (names cannot hold NUL): a cached
// counter under it is looked up again.
const notAGroup = "\x00"

// receivedCounter caches the Received counter of a stream's current group;
// only the receive loop uses it.
type receivedCounter struct {
	src   WriteCounters
	label groupLabel
	kind  string
	group string
	c     Counter
}

func (r *receivedCounter) inc(group string) {
	if r.c == nil || group != r.group {
		l, final := r.label(group)
		r.group, r.c = group, r.src.Received(l, r.kind)
		if !final {
			r.group = notAGroup
		}
	}
	r.c.Inc()
}

// answeredCounter caches the Answered counters of a stream's current group
// by status; only the answer loop uses it.
type answeredCounter struct {
	src      WriteCounters
	label    groupLabel
	kind     string
	group    string
	labelled string
	byStatus map[modelv1.Status]Counter
}

func (a *answeredCounter) inc(group string, st modelv1.Status) {
	if a.byStatus == nil || group != a.group {
		l, final := a.label(group)
		a.group, a.labelled, a.byStatus = group, l, make(map[modelv1.Status]Counter, 2)
		if !final {
			a.group = notAGroup
		}
	}
	c := a.byStatus[st]
	if c == nil {
		c = a.src.Answered(a.labelled, a.kind, st)
		a.byStatus[st] = c
	}
	c.Inc()
}
