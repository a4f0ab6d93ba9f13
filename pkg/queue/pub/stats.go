package pub

import (
	"slices"
	"strings"
)

// NodeStats are one node's gauges.
type NodeStats struct {
	Name, Addr string
	// Down: routed around (unreachable past the retry budget, refused our
	// protocol, or left the table).
	Down bool
	// InFlightBatches are sent and not yet acked, over all its streams.
	InFlightBatches int64
	// BytesInUse are payload bytes queued for it or in flight to it, or
	// taken off it and waiting to be re-placed; Publish blocks while they
	// would exceed MaxBytesPerNode, and re-placed messages take it up to
	// twice that.
	BytesInUse int64
}

// Stats is a snapshot of the client's counters and gauges, for metrics.
type Stats struct {
	Nodes []NodeStats // sorted by name; includes nodes still draining after leaving the table
	// BytesInUse sums the nodes' BytesInUse.
	BytesInUse int64
	// Reconnects counts streams re-opened after a break.
	Reconnects int64
	// Replaced counts messages moved to another node than the one they
	// were queued for or sent to.
	Replaced int64
	// BatchesSent and MessagesSent count frames and messages written,
	// resends included; their ratio is the mean batch size.
	BatchesSent, MessagesSent int64
	// UnderReplicated counts copies of messages of replicated groups that
	// were not written because too few live nodes could hold them.
	UnderReplicated int64
	// AwaitingNodes counts Publish calls waiting for the placement table to
	// have a data node again (see Client: the table became empty less than
	// RetryBudget ago), and WaitingMessages the messages taken off departed
	// nodes that the last tick kept for the same reason.
	AwaitingNodes, WaitingMessages int64
	// MessagesRecycled counts messages whose bookkeeping was taken back
	// for new ones after their batch was acked whole (see package sendq);
	// most are, on a healthy node.
	MessagesRecycled int64
	// BatchesHeld counts the times a send loop left a small batch queued
	// to grow while another batch was in flight on its stream (see
	// sendq.Queue.Take).
	BatchesHeld int64
}

// Stats returns the current counters and gauges. It takes a lock per
// node, not meant for every message.
func (c *Client) Stats() Stats {
	st := Stats{
		Reconnects: c.reconnects.Load(), Replaced: c.replaced.Load(),
		BatchesSent: c.batches.Load(), MessagesSent: c.sent.Load(), UnderReplicated: c.underReplicated.Load(),
		AwaitingNodes: c.awaiting.Load(), WaitingMessages: c.waitingMsgs.Load(), MessagesRecycled: c.counters.Recycled.Load(),
		BatchesHeld: c.counters.Held.Load(),
	}
	c.mu.Lock()
	for n := range c.all {
		ns := NodeStats{
			Name: n.name, Addr: n.addr, Down: n.down.Load(),
			InFlightBatches: n.inFlight(), BytesInUse: n.usedBytes(),
		}
		st.BytesInUse += ns.BytesInUse
		st.Nodes = append(st.Nodes, ns)
	}
	c.mu.Unlock()
	slices.SortFunc(st.Nodes, func(a, b NodeStats) int { return strings.Compare(a.Name, b.Name) })
	return st
}
