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
)

// protocolVersion is the cluster.v1 version this publisher speaks.
const protocolVersion = 1

// batchOverhead over-estimates a Batch frame's encoding beyond its
// messages (oneof tag, batch_id, topic tag and length, deadline).
const batchOverhead = 48

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
	windowFree chan struct{} // an ack freed a window slot

	// Under n.mu.
	pending      []*batch // in flight, oldest first
	nextID       uint64
	lastProgress int64 // unix nano of the last ack, or of the send that filled an empty window
	abort        context.CancelCauseFunc
	sessions     int

	// The send loop's reusable frame: gRPC has encoded it once Send returns.
	req   *clusterv1.StreamRequest
	frame *clusterv1.Batch
}

func newStream(n *node, idx int) *stream {
	f := &clusterv1.Batch{}
	return &stream{
		n: n, idx: idx, windowFree: make(chan struct{}, 1), nextID: 1,
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
		b, r := n.take(s)
		switch r {
		case takeFull:
			select {
			case <-s.windowFree:
			case <-ctx.Done():
				return nil
			}
			continue
		case takeHeld:
			select {
			case <-s.windowFree:
			case <-n.work: // a held batch may have grown enough
			case <-ctx.Done():
				return nil
			}
			continue
		case takeEmpty:
			select {
			case <-n.work:
			case <-ctx.Done():
				return nil
			}
			continue
		case takeAgain:
			continue
		}
		f := s.frame
		f.BatchId, f.Topic, f.DeadlineUnixNano = b.id, string(b.topic), b.maxDeadline
		f.Messages = b.payloads
		k := len(b.msgs) // b may be acked and recycled as soon as Send returns
		err := st.Send(s.req)
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
	n.mu.Lock()
	i := -1
	for j, b := range s.pending {
		if b.id == ack.GetBatchId() {
			i = j
			break
		}
	}
	if i < 0 {
		n.mu.Unlock()
		return fmt.Errorf("node %s: %w: ack for batch %d, which is not in flight", n.name, errProtocol, ack.GetBatchId())
	}
	b := s.pending[i]
	copy(s.pending[i:], s.pending[i+1:])
	s.pending[len(s.pending)-1] = nil
	s.pending = s.pending[:len(s.pending)-1]
	now := time.Now().UnixNano()
	s.lastProgress = now
	n.inflight.Add(-1)
	n.mu.Unlock()
	if o := n.c.obs; o != nil {
		o.BatchAcked(n.name, time.Duration(now-b.sentAt))
	}
	select {
	case s.windowFree <- struct{}{}:
	default:
	}

	var again, retry []*msg
	shrunk := false
	ok := ack.GetBatchFailure() == nil && len(ack.GetFailures()) == 0
	switch {
	case ok && !b.dirty && now < b.minDeadline:
		// Every message is the batch's own and on time: settle them at once.
		b.ack()
		n.release(b.bytes)
		if b.lane != nil {
			b.lane.recycle(b, &n.c.recycled)
		}
		putAckedBatch(b)
		return nil
	case ok:
		replies := ack.GetReplies()
		late := now >= b.minDeadline // else no message of b can have expired
		var fin finisher
		for i, m := range b.msgs {
			if late && m.expired(now) {
				// A late ack: the caller may already have been told the
				// message timed out, so it must not hear otherwise.
				m.resolve(deadlineErr(m, n.name), nil)
				continue
			}
			if m.settle(nil, replyAt(replies, i)) {
				fin.add(m)
			}
		}
		fin.flush()
	default:
		again, retry, shrunk = s.resolveFailures(b, ack, now)
	}
	var kept int64
	for _, m := range again {
		kept += m.size()
	}
	if !shrunk && len(again) == 0 {
		n.release(b.bytes)
	} else {
		n.mu.Lock()
		n.releaseLocked(b.bytes - kept)
		if shrunk { // the node's limit (bytes or count) is lower than ours: halve both
			n.maxBytes.Store(max(n.maxBytes.Load()/2, 1024))
			n.maxMsgs.Store(int64(max(len(b.msgs)/2, 1)))
		}
		if len(again) > 0 {
			n.requeueFront(again)
		}
		n.mu.Unlock()
	}
	if len(retry) > 0 {
		n.c.retryLater(retry...)
	}
	putBatch(b)
	return nil
}

func replyAt(replies [][]byte, i int) []byte {
	if i < len(replies) {
		return replies[i]
	}
	return nil
}

func (s *stream) resolveFailures(b *batch, ack *clusterv1.Ack, now int64) (again, retry []*msg, shrunk bool) {
	n := s.n
	fails := make([]*clusterv1.Failure, len(b.msgs))
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
	for i, m := range b.msgs {
		f := fails[i]
		switch {
		case f == nil && m.expired(now):
			m.resolve(deadlineErr(m, n.name), nil) // a late ack, as in onAck
			continue
		case f == nil:
			m.resolve(nil, replyAt(ack.GetReplies(), i))
			continue
		}
		if m.isDone() {
			continue
		}
		wrap := func(sentinel error) error {
			return fmt.Errorf("queue/pub: node %s failed a %q message: %s: %s: %w",
				n.name, m.topic, f.GetCode(), f.GetReason(), sentinel)
		}
		switch f.GetCode() {
		case clusterv1.Code_CODE_INVALID_ARGUMENT:
			m.resolve(wrap(queue.ErrInvalidMessage), nil)
		case clusterv1.Code_CODE_UNKNOWN_TOPIC:
			m.resolve(wrap(queue.ErrUnknownTopic), nil)
		case clusterv1.Code_CODE_DEADLINE_EXCEEDED:
			m.resolve(wrap(queue.ErrDeadline), nil)
		case clusterv1.Code_CODE_TOO_LARGE:
			shrunk = true
			m.keepPayload(b.payloads[i])
			again = append(again, m)
		default: // UNAVAILABLE, INTERNAL, unknown codes: retry elsewhere
			if m.pinned() {
				m.resolve(fmt.Errorf("queue/pub: node %s failed a %q request: %s: %s",
					n.name, m.topic, f.GetCode(), f.GetReason()), nil)
				continue
			}
			m.failedOn(n.name, fmt.Errorf("node %s: %s: %s", n.name, f.GetCode(), f.GetReason()))
			m.keepPayload(b.payloads[i])
			retry = append(retry, m)
		}
	}
	return again, retry, shrunk
}
