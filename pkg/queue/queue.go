// Package queue is the contract between the liaison's write path and the
// data nodes' listeners, independent of transport. pkg/bus implements it in
// process for standalone mode; pkg/queue/pub and pkg/queue/sub implement it
// over gRPC for cluster mode. This package knows nothing of gRPC.
package queue

import (
	"context"
	"errors"
	"time"
)

// Topic names a kind of message, e.g. TopicStreamWrite.
type Topic string

// Topics used by banyand's roles.
const (
	TopicStreamWrite  Topic = "stream-write"
	TopicMeasureWrite Topic = "measure-write"
	TopicStreamQuery  Topic = "stream-query"
	TopicMeasureQuery Topic = "measure-query"
	// TopicHint carries writes of replicated groups that reached fewer
	// nodes than their replicas ask for (cluster.v1.Hint), to be copied on.
	TopicHint Topic = "hint"
	// TopicPropertyWrite carries cluster.v1.PropertyWrite (Apply and
	// Delete), TopicPropertyQuery cluster.v1.PropertyQuery.
	TopicPropertyWrite Topic = "property-write"
	TopicPropertyQuery Topic = "property-query"
	// TopicTraceWrite carries cluster.v1.TraceWrite (one span),
	// TopicTraceQuery cluster.v1.TraceQuery.
	TopicTraceWrite Topic = "trace-write"
	TopicTraceQuery Topic = "trace-query"
)

// Errors callers branch on; implementations wrap them with detail.
var (
	// ErrClosed: the client, publisher or server is closed.
	ErrClosed = errors.New("queue: closed")
	// ErrDeadline: the message was not acknowledged before its deadline.
	// Whether it was written is unknown; a retry is safe (writes are idempotent).
	ErrDeadline = errors.New("queue: message deadline exceeded")
	// ErrResourceExhausted: the publisher's memory bound was full for longer
	// than the caller was willing to wait.
	ErrResourceExhausted = errors.New("queue: resource exhausted")
	// ErrNoNodes: no live node can take the message.
	ErrNoNodes = errors.New("queue: no node available")
	// ErrUnknownTopic: the receiving side has no listener for the topic.
	ErrUnknownTopic = errors.New("queue: unknown topic")
	// ErrInvalidMessage: the receiving side rejected the message itself; a
	// retry cannot succeed.
	ErrInvalidMessage = errors.New("queue: invalid message")
)

// Message is one payload to deliver. Group and Shard say where it goes
// (the placement of the group's shard); the in-process bus ignores them.
type Message struct {
	Group   string
	Shard   uint32
	Payload []byte
}

// Future is the outcome of one published message. It is a small value,
// not an interface, so that Publish allocates nothing for it: the
// implementation's Waiter and a Token for it.
type Future struct {
	w   Waiter
	tok Token
}

// Waiter is what a queue implementation puts behind a Future.
type Waiter interface {
	// Wait is Future.Get for the future made with tok.
	Wait(ctx context.Context, tok Token) error
}

// Token is the part of a Future that only its implementation reads: a
// pointer of the implementation's own type, or none (the zero Token). It
// lets one Waiter answer for more than one future, each telling it which
// message it stands for, without Publish allocating a Waiter a message;
// an implementation that has a Waiter per message uses the zero Token.
type Token struct{ p any }

// MakeToken returns the token holding p.
func MakeToken[T any](p *T) Token { return Token{p: p} }

// TokenValue returns the pointer t holds if it is a *T, else nil.
func TokenValue[T any](t Token) *T {
	p, _ := t.p.(*T)
	return p
}

// NewFuture returns the future that waits on w with tok.
func NewFuture(w Waiter, tok Token) Future { return Future{w: w, tok: tok} }

// IsZero reports whether f is the zero Future, which a failed Publish
// returns.
func (f Future) IsZero() bool { return f.w == nil }

// errNoFuture is what the zero Future reports: a bug in the caller.
var errNoFuture = errors.New("queue: Get on the zero Future (a failed Publish returns no future)")

// Get waits until the message is acknowledged (nil), fails, or ctx is
// done. Giving up on the wait does not cancel the message. A future may
// be asked again, from any goroutine.
//
// Once Get has returned nil the queue reads the message's payload no
// more, so the publisher may reuse its memory. After a failure it may
// still (a copy or a resend can be on its way): leave it to the GC.
func (f Future) Get(ctx context.Context) error {
	if f.w == nil {
		return errNoFuture
	}
	return f.w.Wait(ctx, f.tok)
}

// BatchPublisher publishes many messages and collects their acks. It is
// meant to live as long as one client write stream.
type BatchPublisher interface {
	// Publish queues msg for topic and returns its future. It may block while
	// the publisher's memory bound is full, at most until ctx is done, then
	// returns ErrResourceExhausted.
	Publish(ctx context.Context, topic Topic, msg Message) (Future, error)
	// Close waits for every outstanding message to be acked or failed.
	Close() error
}

// Reply is one node's answer to a broadcast request.
type Reply struct {
	Node    string
	Payload []byte
	Err     error
}

// Client sends messages to the listeners of a topic.
type Client interface {
	// NewBatchPublisher opens a publisher whose messages each fail with
	// ErrDeadline if not acked within timeout.
	NewBatchPublisher(timeout time.Duration) BatchPublisher
	// Broadcast sends one request to every node that may hold data of group
	// and returns each node's reply (queries scatter this way).
	Broadcast(ctx context.Context, topic Topic, group string, payload []byte) ([]Reply, error)
}

// Asker is Broadcast with a request of its own for each node: queries
// that split work between the nodes send each its part.
type Asker interface {
	// Ask sends payload(node) to every node Broadcast would send to and
	// returns each node's reply, as Broadcast does.
	Ask(ctx context.Context, topic Topic, group string, payload func(node string) []byte) ([]Reply, error)
}

// Batch is what a listener receives: messages of one topic. The messages
// are valid only until Handle returns (a transport may reuse their memory
// for the next batch): a listener that keeps a message, or hands it to
// work that outlives Handle, copies it. Replies may alias them.
type Batch struct {
	Topic    Topic
	Messages [][]byte
	// Local is set by the in-process queue (pkg/bus): the messages were
	// built in this process by the liaison, which validated them before
	// publishing. A listener may then skip checks that guard only against a
	// foreign or damaged sender, and read just what it needs. A transport
	// that received the bytes from another process never sets it.
	Local bool
}

// Result is a listener's answer to a batch. A nil Errs means all succeeded;
// otherwise Errs[i] is message i's failure (wrap ErrInvalidMessage for a
// message that can never succeed). Replies, for request topics, has one
// payload per message.
type Result struct {
	Errs    []error
	Replies [][]byte
}

// Listener handles batches of one topic. It returns only once its work is
// as durable as the topic promises: the ack is sent after it returns.
type Listener interface {
	Handle(ctx context.Context, b Batch) Result
}

// ListenerFunc adapts a function to Listener.
type ListenerFunc func(ctx context.Context, b Batch) Result

// Handle calls f.
func (f ListenerFunc) Handle(ctx context.Context, b Batch) Result { return f(ctx, b) }

// Server hands received messages to listeners.
type Server interface {
	// Subscribe registers l for topic; one listener per topic.
	Subscribe(topic Topic, l Listener) error
}

// Queue is both ends, as standalone mode uses it.
type Queue interface {
	Client
	Server
}
