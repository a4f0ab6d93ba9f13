package schema

import (
	"cmp"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
)

// Trace limits, shared by the liaison and the data nodes.
const (
	// DefaultTraceLimit is a trace query's limit, in traces, when it asks
	// for none (as BanyanDB v0.10's trace queries).
	DefaultTraceLimit = 20
	// MaxSpanBytes bounds one span's bytes: a larger span is refused with
	// INVALID_ARGUMENT. Far above what an agent sends (OAP's segments are
	// a few KiB), far below the cluster protocol's batch bound (16 MiB).
	MaxSpanBytes = 4 << 20
	// MaxTraceReplyBytes bounds the spans one trace query may hold on a
	// data node and on the liaison: past it the query fails
	// RESOURCE_EXHAUSTED rather than growing the process.
	MaxTraceReplyBytes = 32 << 20
)

// CompareTraceKeys orders traces for output: non-null keys first, by key
// (descending when desc), then by trace id. Data nodes keep their first
// offset+limit by it, and the liaison merges their answers by it.
func CompareTraceKeys(a, b *clusterv1.TraceKey, desc bool) int {
	if a.GetNullKey() != b.GetNullKey() {
		if a.GetNullKey() {
			return 1
		}
		return -1
	}
	c := cmp.Compare(a.GetKey(), b.GetKey())
	if desc {
		c = -c
	}
	return cmp.Or(c, cmp.Compare(a.GetTraceId(), b.GetTraceId()))
}
