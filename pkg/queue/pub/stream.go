package pub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
)

// protocolVersion is the cluster.v1 version this publisher speaks.
const protocolVersion = 1

var (
	errStalled          = errors.New("stream stalled")
	errHandshakeTimeout = errors.New("handshake timed out")
	errProtocol         = errors.New("protocol violation")
)

// stream is one long-lived Stream RPC to a node, re-opened when it breaks.
// Its send loop is the only caller of Send, its receive loop the only
// caller of Recv.
type stream struct {
	n          *node
	idx        int
	q          *sendq.Queue  // n's queue it sends: writes or requests
	w          *sendq.Window // its batches in flight, in q
	windowFree chan struct{} // an ack freed a window slot

	// Under n.mu.
	abort    context.CancelCauseFunc
	sessions int

	// The send loop's reusable frame: gRPC has encoded it once Send returns.
	req   *clusterv1.StreamRequest
	frame *clusterv1.Batch
}

func newStream(n *node, idx int, q *sendq.Queue) *stream {
	f := &clusterv1.Batch{}
	return &stream{
		n: n, idx: idx, q: q, w: q.NewWindow(), windowFree: make(chan struct{}, 1),
		req:   &clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Batch{Batch: f}},
		frame: f,
	}
}

// run keeps a session open until ctx ends, reconnecting with jittered
// exponential backoff (gRPC's own backoff paces the TCP dials underneath).
func (s *stream) run(ctx context.Context) {
	defer s.n.wg.Done()
	n, cfg := s.n, &s.n.c.cfg
	bo := jitterBackoff{base: 20 * time.Millisecond, max: cfg.MaxBackoff}
	for {
		began := time.Now()
		up, incompatible, err := s.session(ctx)
		n.streamEnded(s, up, incompatible)
		if ctx.Err() != nil {
			return
		}
		if incompatible {
			n.c.log.Error("data node refused this publisher; not retrying until it re-registers",
				"node", n.name, "addr", n.addr, "err", err)
			return
		}
		n.c.log.Warn("stream to data node ended; reconnecting", "node", n.name, "addr", n.addr,
			"stream", s.idx, "err", err)
		if up && time.Since(began) > cfg.MaxBackoff {
			bo.reset()
		}
		if !bo.wait(ctx) {
			return
		}
	}
}

// session opens the stream, shakes hands and runs both loops until either
// ends. up reports whether the handshake succeeded.
func (s *stream) session(ctx context.Context) (up, incompatible bool, err error) {
	n, cfg := s.n, &s.n.c.cfg
	conn := n.conn.Load()
	sctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	hs := time.AfterFunc(cfg.HandshakeTimeout, func() { abort(errHandshakeTimeout) })
	st, ack, err := s.handshake(sctx, conn)
	if !hs.Stop() || errors.Is(context.Cause(sctx), errHandshakeTimeout) {
		// A peer that accepts TCP but never answers may sit behind a dead
		// connection: start over on a fresh one.
		n.resetConn(conn)
		return false, false, fmt.Errorf("node %s: no HelloAck within %s: %w", n.name, cfg.HandshakeTimeout, errHandshakeTimeout)
	}
	if err != nil {
		if status.Code(err) == codes.FailedPrecondition {
			return false, true, fmt.Errorf("node %s refused protocol version %d: %w", n.name, protocolVersion, err)
		}
		return false, false, fmt.Errorf("node %s: opening stream: %w", n.name, err)
	}
	if ack.GetProtocolVersion() != protocolVersion {
		return false, true, fmt.Errorf("node %s answered protocol version %d, this publisher speaks %d: %w",
			n.name, ack.GetProtocolVersion(), protocolVersion, errProtocol)
	}
	limit := int64(cfg.MaxBatchBytes)
	if mb := ack.GetMaxBatchBytes(); mb > 0 && mb < uint64(limit) {
		limit = int64(mb)
	}
	n.streamUp(s, abort, int(limit))

	recvErr := make(chan error, 1)
	go func() {
		err := s.recvLoop(st)
		abort(err)
		recvErr <- err
	}()
	sendErr := s.sendLoop(sctx, st)
	abort(sendErr)
	rerr := <-recvErr
	switch cause := context.Cause(sctx); {
	case errors.Is(cause, errStalled):
		return true, false, cause
	case rerr != nil && !errors.Is(rerr, context.Canceled) && status.Code(rerr) != codes.Canceled:
		return true, false, rerr
	case sendErr != nil:
		return true, false, sendErr
	default:
		return true, false, cause
	}
}

type clientStream = grpc.BidiStreamingClient[clusterv1.StreamRequest, clusterv1.StreamResponse]

func (s *stream) handshake(ctx context.Context, conn *grpc.ClientConn) (clientStream, *clusterv1.HelloAck, error) {
	st, err := clusterv1.NewQueueServiceClient(conn).Stream(ctx)
	if err != nil {
		return nil, nil, err
	}
	hello := &clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Hello{Hello: &clusterv1.Hello{
		ProtocolVersion: protocolVersion, NodeName: s.n.c.cfg.NodeName,
	}}}
	// A failed Send reports io.EOF; the stream's real status comes from Recv.
	_ = st.Send(hello)
	resp, err := st.Recv()
	if err != nil {
		return nil, nil, err
	}
	ack := resp.GetHelloAck()
	if ack == nil {
		return nil, nil, fmt.Errorf("%w: first frame is %T, want a HelloAck", errProtocol, resp.GetFrame())
	}
	return st, ack, nil
}

// sendLoop sends batches while the window has room and work is queued.
func (s *stream) sendLoop(ctx context.Context, st clientStream) error {
	n := s.n
	for {
		b, r := s.q.Take(s.w)
		switch r {
		case sendq.Full:
			select {
			case <-s.windowFree:
			case <-ctx.Done():
				return nil
			}
			continue
		case sendq.Held:
			select {
			case <-s.windowFree:
			case <-s.q.Work(): // a held batch may have grown enough
			case <-ctx.Done():
				return nil
			}
			continue
		case sendq.Empty:
			select {
			case <-s.q.Work():
			case <-ctx.Done():
				return nil
			}
			continue
		case sendq.Again:
			continue
		}
		f := s.frame
		f.BatchId, f.Topic, f.DeadlineUnixNano = b.ID(), string(b.Topic()), b.Deadline()
		f.TimeoutNanos = timeLeft(b.Deadline(), b.SentAt())
		f.Messages = b.Payloads()
		k := b.Len() // b may be acked and reused as soon as Send returns
		err := st.SendMsg(batchFrame{s.req})
		f.Messages = nil
		if err != nil {
			return fmt.Errorf("node %s: sending batch: %w", n.name, err)
		}
		n.c.batches.Add(1)
		n.c.sent.Add(int64(k))
		if o := n.c.obs; o != nil {
			o.BatchSent(n.name, k)
		}
	}
}

// timeLeft is a batch's timeout_nanos: the time from sentAt to deadline,
// both on this machine's clock, which the subscriber counts from when it
// receives the batch on its own; at least 1 (0 would mean none), and 0
// for a batch without a deadline. deadline_unix_nano, sent alongside for
// subscribers that predate it, compares the two machines' clocks.
func timeLeft(deadline, sentAt int64) int64 {
	if deadline == 0 {
		return 0
	}
	return max(deadline-sentAt, 1)
}

// recvLoop matches acks to in-flight batches until the stream ends.
func (s *stream) recvLoop(st clientStream) error {
	resp := new(clusterv1.StreamResponse)
	for {
		if err := st.RecvMsg(resp); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("node %s closed the stream", s.n.name)
			}
			return err
		}
		ack := resp.GetAck()
		if ack == nil {
			return fmt.Errorf("node %s: %w: %T frame after the handshake", s.n.name, errProtocol, resp.GetFrame())
		}
		if err := s.onAck(ack); err != nil {
			return err
		}
	}
}

// onAck resolves one batch's futures. Retryable failures go to the retry
// list (re-placed on the next tick), too-large ones back to this node.
func (s *stream) onAck(ack *clusterv1.Ack) error {
	n := s.n
	now := time.Now().UnixNano()
	b := s.q.Landed(s.w, ack.GetBatchId(), now)
	if b == nil {
		return fmt.Errorf("node %s: %w: ack for batch %d, which is not in flight", n.name, errProtocol, ack.GetBatchId())
	}
	if o := n.c.obs; o != nil {
		o.BatchAcked(n.name, time.Duration(now-b.SentAt()))
	}
	select {
	case s.windowFree <- struct{}{}:
	default:
	}
	if ack.GetBatchFailure() == nil && len(ack.GetFailures()) == 0 {
		s.q.Acked(b, ack.GetReplies(), now)
		return nil
	}
	if retry := s.q.Failed(b, ack.GetReplies(), now, s.judge(ack, b.Len())); len(retry) > 0 {
		n.c.retryLater(retry...)
	}
	return nil
}

// judge returns what a failing ack says of each of its batch's k
// messages, for sendq.Queue.Failed.
func (s *stream) judge(ack *clusterv1.Ack, k int) func(i int, m *msg) (sendq.Verdict, error) {
	name := s.n.name
	fails := make([]*clusterv1.Failure, k)
	if bf := ack.GetBatchFailure(); bf != nil {
		for i := range fails {
			fails[i] = bf
		}
	}
	for _, f := range ack.GetFailures() {
		if int(f.GetIndex()) < len(fails) {
			fails[f.GetIndex()] = cmp.Or(f.GetFailure(), &clusterv1.Failure{Reason: "no failure detail"})
		}
	}
	return func(i int, m *msg) (sendq.Verdict, error) {
		f := fails[i]
		if f == nil {
			return sendq.Succeeded, nil
		}
		wrap := func(sentinel error) error {
			return fmt.Errorf("queue/pub: node %s failed a %q message: %s: %s: %w",
				name, m.Topic, f.GetCode(), f.GetReason(), sentinel)
		}
		switch f.GetCode() {
		case clusterv1.Code_CODE_INVALID_ARGUMENT:
			return sendq.Refused, wrap(queue.ErrInvalidMessage)
		case clusterv1.Code_CODE_UNKNOWN_TOPIC:
			return sendq.Refused, wrap(queue.ErrUnknownTopic)
		case clusterv1.Code_CODE_DEADLINE_EXCEEDED:
			return sendq.Refused, wrap(queue.ErrDeadline)
		case clusterv1.Code_CODE_RESOURCE_EXHAUSTED:
			return sendq.Refused, wrap(queue.ErrResourceExhausted)
		case clusterv1.Code_CODE_TOO_LARGE:
			return sendq.TooLarge, nil
		}
		// UNAVAILABLE, INTERNAL, unknown codes: retry elsewhere, except a
		// request, which belongs to this node.
		if m.Pinned() {
			return sendq.Refused, fmt.Errorf("queue/pub: node %s failed a %q request: %s: %s",
				name, m.Topic, f.GetCode(), f.GetReason())
		}
		return sendq.Retry, fmt.Errorf("node %s: %s: %s", name, f.GetCode(), f.GetReason())
	}
}
