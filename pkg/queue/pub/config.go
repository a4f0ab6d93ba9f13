package pub

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Defaults for a Config whose fields are zero.
const (
	DefaultStreamsPerNode     = 1
	DefaultMaxInFlightBatches = 8
	DefaultMaxBatchMessages   = 1024
	DefaultMaxBatchBytes      = 1 << 20
	DefaultMaxBytesPerNode    = 64 << 20
	DefaultPublishWait        = 5 * time.Second
	DefaultRetryBudget        = 2 * time.Second
	DefaultStallTimeout       = 5 * time.Second
	DefaultHandshakeTimeout   = 2 * time.Second
	DefaultBroadcastTimeout   = 10 * time.Second
	DefaultTickInterval       = 10 * time.Millisecond
	DefaultMaxBackoff         = 2 * time.Second
	DefaultMaxRecvMsgSize     = 64 << 20
)

// Config configures a Client. Zero fields take the defaults above.
type Config struct {
	// NodeName is this publisher's name, sent in the stream's Hello.
	NodeName string
	// TLS, when set, secures every connection; nil means plaintext.
	TLS *tls.Config
	// StreamsPerNode is how many long-lived streams each node gets. One
	// keeps batches largest; more help when one stream's window is the limit.
	StreamsPerNode int
	// MaxInFlightBatches is each stream's window: batches sent and not yet
	// acked. The send loop waits for an ack when it is full.
	MaxInFlightBatches int
	// MaxBatchMessages and MaxBatchBytes cap one batch. The byte cap is
	// lowered further to the subscriber's HelloAck.max_batch_bytes.
	MaxBatchMessages int
	MaxBatchBytes    int
	// MaxBytesPerNode bounds the payload bytes queued plus in flight for one
	// node. Publish blocks while it is full (see Client).
	MaxBytesPerNode int64
	// PublishWait is the longest Publish blocks for room before it returns
	// queue.ErrResourceExhausted (the caller's ctx may cut it shorter).
	PublishWait time.Duration
	// RetryBudget is how long a node may stay unreachable before its queued
	// and in-flight messages are re-placed on the next node of their
	// placement order and new messages are routed around it; and how long
	// after the table lost its last node messages wait for one.
	RetryBudget time.Duration
	// StallTimeout: a stream with batches in flight and no ack for this long
	// is treated as broken (the node stopped answering without closing).
	StallTimeout time.Duration
	// HandshakeTimeout bounds the wait for a HelloAck.
	HandshakeTimeout time.Duration
	// BroadcastTimeout bounds a Broadcast whose ctx has no deadline.
	BroadcastTimeout time.Duration
	// TickInterval is how often deadlines, stalls, retry budgets and the
	// placement table are checked; it is the granularity of those timers.
	TickInterval time.Duration
	// MaxBackoff caps the jittered backoff between reconnect attempts.
	MaxBackoff time.Duration
	// MaxRecvMsgSize bounds an incoming frame (an Ack with replies).
	MaxRecvMsgSize int
	// UnderReplicated says what becomes of a message of a replicated group
	// that fewer live nodes can take than it wants copies (see Client).
	UnderReplicated UnderReplicatedPolicy
}

// UnderReplicatedPolicy is what a client does with a message of a
// replicated group when no live node without a copy is left for one of
// its copies.
type UnderReplicatedPolicy int

const (
	// GiveUpCopies lets the message succeed with the copies it has and
	// counts the missing ones (Stats.UnderReplicated).
	GiveUpCopies UnderReplicatedPolicy = iota
	// HintCopies counts them too, and also sends a queue.TopicHint message
	// (cluster.v1.Hint, the write as published) to a live node holding a
	// copy; the message succeeds only once that hint is acked, that is
	// durable, so a node that keeps it can make the missing copies later.
	HintCopies
	// FailCopies fails the message with ErrUnderReplicated: for a caller
	// that wants every copy or none (hinted handoff itself).
	FailCopies
)

// RegisterFlags binds the operator-facing settings to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.StreamsPerNode, "queue-streams-per-node", DefaultStreamsPerNode,
		"long-lived gRPC streams the liaison keeps open to each data node")
	fs.IntVar(&c.MaxInFlightBatches, "queue-max-inflight-batches", DefaultMaxInFlightBatches,
		"batches sent on one stream and not yet acknowledged")
	fs.Int64Var(&c.MaxBytesPerNode, "queue-max-bytes-per-node", DefaultMaxBytesPerNode,
		"payload bytes queued and in flight per data node before writers are blocked")
	fs.DurationVar(&c.RetryBudget, "queue-retry-budget", DefaultRetryBudget,
		"how long an unreachable data node keeps its writes before they are re-placed on the next node, and how long writes wait for a node when there is none")
	fs.DurationVar(&c.PublishWait, "queue-publish-wait", DefaultPublishWait,
		"how long a write waits for room in a full per-node buffer before failing with resource exhausted")
}

// Validate reports a config the client cannot work with, after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.StreamsPerNode < 1 || c.MaxInFlightBatches < 1 || c.MaxBatchMessages < 1:
		return fmt.Errorf("queue/pub: streams per node (%d), in-flight batches (%d) and batch messages (%d) must be at least 1",
			c.StreamsPerNode, c.MaxInFlightBatches, c.MaxBatchMessages)
	case c.MaxBatchBytes < 1024:
		return fmt.Errorf("queue/pub: max batch bytes %d must be at least 1024", c.MaxBatchBytes)
	case c.MaxBytesPerNode < int64(c.MaxBatchBytes):
		return fmt.Errorf("queue/pub: max bytes per node %d must be at least max batch bytes %d",
			c.MaxBytesPerNode, c.MaxBatchBytes)
	case c.PublishWait < 0 || c.RetryBudget <= 0 || c.StallTimeout <= 0 || c.HandshakeTimeout <= 0 ||
		c.BroadcastTimeout <= 0 || c.TickInterval <= 0 || c.MaxBackoff <= 0:
		return fmt.Errorf("queue/pub: durations must be positive")
	}
	return nil
}

func (c Config) withDefaults() Config {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.StreamsPerNode, DefaultStreamsPerNode)
	setInt(&c.MaxInFlightBatches, DefaultMaxInFlightBatches)
	setInt(&c.MaxBatchMessages, DefaultMaxBatchMessages)
	setInt(&c.MaxBatchBytes, DefaultMaxBatchBytes)
	setInt(&c.MaxRecvMsgSize, DefaultMaxRecvMsgSize)
	if c.MaxBytesPerNode == 0 {
		c.MaxBytesPerNode = DefaultMaxBytesPerNode
	}
	setDur(&c.PublishWait, DefaultPublishWait)
	setDur(&c.RetryBudget, DefaultRetryBudget)
	setDur(&c.StallTimeout, DefaultStallTimeout)
	setDur(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	setDur(&c.BroadcastTimeout, DefaultBroadcastTimeout)
	setDur(&c.TickInterval, DefaultTickInterval)
	setDur(&c.MaxBackoff, DefaultMaxBackoff)
	return c
}
