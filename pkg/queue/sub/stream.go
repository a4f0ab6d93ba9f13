package sub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
)

// stream serves one QueueService stream. The handler goroutine (run) is the
// only one to call Send; recvLoop, on its own goroutine, is the only one to
// call Recv. Each batch runs on its own goroutine, at most ListenerWorkers
// at a time, and hands its ack to run through out.
type stream struct {
	s    *Server
	gs   clusterv1.QueueService_StreamServer
	ctx  context.Context
	peer string

	// slots bounds the batches of this stream between Recv and Send: the
	// receive loop takes a slot before each Recv and run frees it once the
	// batch's ack is sent. With every slot taken the stream is not read,
	// and gRPC flow control pushes back on the publisher.
	slots chan struct{}
	// out carries frames to send. It holds one more than slots (the
	// HelloAck), so nobody ever blocks on it, even after run has returned.
	out chan outFrame

	// mu guards closing and listening: once closing is set, no batch is
	// handed to a listener, so run can wait for listening to reach zero.
	mu        sync.Mutex
	closing   bool
	listening int
}

type outFrame struct {
	resp     *clusterv1.StreamResponse
	slot     bool      // holds a slot, freed once sent
	listened bool      // the batch went to a listener
	buf      *frameBuf // the acked batch's frame, released once sent
}

func newStream(s *Server, gs clusterv1.QueueService_StreamServer) *stream {
	st := &stream{
		s:     s,
		gs:    gs,
		ctx:   gs.Context(),
		slots: make(chan struct{}, s.cfg.ListenerWorkers),
		out:   make(chan outFrame, s.cfg.ListenerWorkers+1),
	}
	if p, ok := peer.FromContext(st.ctx); ok {
		st.peer = p.Addr.String()
	}
	return st
}

// run is the send loop. It returns when the publisher half-closes and
// every ack has been sent (nil), when the stream breaks or the publisher
// breaks the protocol (that error), or when the server drains and the last
// batch in a listener has been acked (UNAVAILABLE).
func (st *stream) run() error {
	recvDone := make(chan error, 1)
	go func() { recvDone <- st.recvLoop() }()
	drain := st.s.draining
	recvEnded, draining := false, false
	for {
		if recvEnded && len(st.slots) == 0 && len(st.out) == 0 {
			return nil
		}
		if draining && st.idle() {
			return status.Errorf(codes.Unavailable, "subscriber %s is shutting down", st.s.cfg.NodeName)
		}
		select {
		case f := <-st.out:
			if err := st.gs.Send(f.resp); err != nil {
				return err
			}
			// Send has encoded the ack (whose replies may alias the
			// request), and the listener returned before it was queued.
			f.buf.release()
			if f.slot {
				<-st.slots
			}
			if f.listened {
				st.mu.Lock()
				st.listening--
				st.mu.Unlock()
			}
		case err := <-recvDone:
			recvDone = nil
			if !errors.Is(err, io.EOF) {
				return err
			}
			recvEnded = true
		case <-drain:
			drain = nil
			draining = true
			st.mu.Lock()
			st.closing = true
			st.mu.Unlock()
		case <-st.ctx.Done():
			return status.FromContextError(st.ctx.Err()).Err()
		}
	}
}

func (st *stream) idle() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.listening == 0
}

// recvLoop reads the handshake and then batches until the stream ends.
func (st *stream) recvLoop() (err error) {
	defer func() {
		if r := recover(); r != nil {
			st.s.log.Error("receive loop panicked", "peer", st.peer, "panic", r, "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "subscriber %s: internal error", st.s.cfg.NodeName)
		}
	}()
	hello := new(recvFrame)
	if err := st.gs.RecvMsg(hello); err != nil {
		return err
	}
	if err := st.handshake(&hello.req); err != nil {
		st.s.log.Warn("handshake refused", "peer", st.peer, "err", err)
		return err
	}
	for {
		select {
		case st.slots <- struct{}{}:
		case <-st.ctx.Done():
			return st.ctx.Err()
		}
		// A fresh frame per batch: its messages stay in use until the
		// batch is acked, while the next ones are received.
		f := new(recvFrame)
		if err := st.gs.RecvMsg(f); err != nil {
			<-st.slots
			return err
		}
		recvAt := time.Now() // a batch's deadline counts from here (see batchDeadline)
		b := f.req.GetBatch()
		if b == nil {
			<-st.slots
			what := "an empty frame"
			if f.req.GetHello() != nil {
				what = "a second Hello"
			}
			err := status.Errorf(codes.InvalidArgument, "protocol error: %s after the handshake", what)
			st.s.log.Warn("stream refused", "peer", st.peer, "err", err)
			return err
		}
		st.dispatch(b, f.buf, recvAt)
	}
}

// handshake checks the first frame and queues the HelloAck.
func (st *stream) handshake(req *clusterv1.StreamRequest) error {
	h := req.GetHello()
	if h == nil {
		return status.Error(codes.InvalidArgument, "protocol error: the first frame must be Hello")
	}
	// The publisher sends its highest version; both use the lower of the two.
	v := min(h.GetProtocolVersion(), ProtocolVersion)
	if v < 1 {
		return status.Errorf(codes.FailedPrecondition,
			"incompatible protocol: publisher %q speaks version %d, subscriber %q speaks version %d",
			h.GetNodeName(), h.GetProtocolVersion(), st.s.cfg.NodeName, ProtocolVersion)
	}
	st.out <- outFrame{resp: &clusterv1.StreamResponse{Frame: &clusterv1.StreamResponse_HelloAck{HelloAck: &clusterv1.HelloAck{
		ProtocolVersion: v,
		NodeName:        st.s.cfg.NodeName,
		MaxBatchBytes:   uint64(st.s.cfg.MaxRecvMsgSize),
	}}}}
	return nil
}

// batchDeadline is when b is moot, on this node's clock: the time it was
// received plus the time the publisher still gave it when it sent it
// (timeout_nanos), so that the two machines' clocks are never compared.
// A publisher that sends only its own clock's deadline_unix_nano (one
// that predates timeout_nanos) gets that. Zero means none.
func batchDeadline(b *clusterv1.Batch, recvAt time.Time) time.Time {
	if t := b.GetTimeoutNanos(); t != 0 {
		return recvAt.Add(time.Duration(t))
	}
	if d := b.GetDeadlineUnixNano(); d != 0 {
		return time.Unix(0, d)
	}
	return time.Time{}
}

// dispatch hands b to its listener on a new goroutine, or acks its refusal.
// The caller holds a slot for b; buf, if any, is b's frame; recvAt is
// when it was received.
func (st *stream) dispatch(b *clusterv1.Batch, buf *frameBuf, recvAt time.Time) {
	l := st.s.listener(b.GetTopic())
	deadline := batchDeadline(b, recvAt)
	var fail *clusterv1.Failure
	switch {
	case l == nil:
		fail = failure(clusterv1.Code_CODE_UNKNOWN_TOPIC, "no listener for topic %q on node %s", b.GetTopic(), st.s.cfg.NodeName)
	case st.s.cfg.MaxBatchMessages > 0 && len(b.GetMessages()) > st.s.cfg.MaxBatchMessages:
		fail = failure(clusterv1.Code_CODE_TOO_LARGE, "batch of %d messages, at most %d accepted",
			len(b.GetMessages()), st.s.cfg.MaxBatchMessages)
	case !deadline.IsZero() && !time.Now().Before(deadline):
		fail = failure(clusterv1.Code_CODE_DEADLINE_EXCEEDED, "batch arrived %v after its deadline",
			time.Since(deadline))
	}
	if fail == nil {
		st.mu.Lock()
		if st.closing {
			fail = failure(clusterv1.Code_CODE_UNAVAILABLE, "subscriber %s is shutting down", st.s.cfg.NodeName)
		} else {
			st.listening++
		}
		st.mu.Unlock()
	}
	if fail != nil {
		st.out <- outFrame{resp: ackFrame(&clusterv1.Ack{BatchId: b.GetBatchId(), BatchFailure: fail}), slot: true, buf: buf}
		return
	}
	st.s.inflight.Add(1)
	go st.handle(l, b, buf, deadline)
}

// handle runs one batch through its listener, bounded by deadline unless
// it is zero, and queues the ack.
func (st *stream) handle(l queue.Listener, b *clusterv1.Batch, buf *frameBuf, deadline time.Time) {
	ack := &clusterv1.Ack{BatchId: b.GetBatchId()}
	defer func() {
		st.s.inflight.Add(-1)
		st.out <- outFrame{resp: ackFrame(ack), slot: true, listened: true, buf: buf}
	}()
	ctx := st.ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	n := len(b.GetMessages())
	res, panicked := callListener(ctx, l, queue.Batch{Topic: queue.Topic(b.GetTopic()), Messages: b.GetMessages()})
	switch {
	case panicked != nil:
		st.s.log.Error("listener panicked", "topic", b.GetTopic(), "batch", b.GetBatchId(), "panic", panicked.value,
			"stack", string(panicked.stack))
		ack.BatchFailure = failure(clusterv1.Code_CODE_INTERNAL, "listener for topic %q panicked: %v", b.GetTopic(), panicked.value)
	case res.Errs != nil && len(res.Errs) != n:
		ack.BatchFailure = failure(clusterv1.Code_CODE_INTERNAL, "listener for topic %q returned %d errors for %d messages",
			b.GetTopic(), len(res.Errs), n)
	case res.Replies != nil && len(res.Replies) != n:
		ack.BatchFailure = failure(clusterv1.Code_CODE_INTERNAL, "listener for topic %q returned %d replies for %d messages",
			b.GetTopic(), len(res.Replies), n)
	default:
		for i, err := range res.Errs {
			if err != nil {
				ack.Failures = append(ack.Failures, &clusterv1.MessageFailure{
					Index:   uint32(i),
					Failure: &clusterv1.Failure{Code: CodeOf(err), Reason: err.Error()},
				})
			}
		}
		ack.Replies = res.Replies
		st.capReplies(ack)
	}
}

// capReplies fails, in batch order, the messages whose reply would take
// the ack's replies past MaxReplyBytes, and drops those replies.
func (st *stream) capReplies(ack *clusterv1.Ack) {
	total, limit := 0, st.s.cfg.MaxReplyBytes
	for i, r := range ack.Replies {
		if total+len(r) <= limit {
			total += len(r)
			continue
		}
		ack.Replies[i] = nil
		ack.Failures = append(ack.Failures, &clusterv1.MessageFailure{
			Index: uint32(i),
			Failure: failure(clusterv1.Code_CODE_RESOURCE_EXHAUSTED, "reply of %d bytes: a batch's replies are bounded at %d bytes; ask for less",
				len(r), limit),
		})
	}
}

type panicInfo struct {
	value any
	stack []byte
}

func callListener(ctx context.Context, l queue.Listener, b queue.Batch) (res queue.Result, p *panicInfo) {
	defer func() {
		if r := recover(); r != nil {
			p = &panicInfo{value: r, stack: debug.Stack()}
		}
	}()
	return l.Handle(ctx, b), nil
}

// CodeOf is the code a listener's error is acked with: the contract's
// sentinels map to their codes, anything else is CODE_INTERNAL.
func CodeOf(err error) clusterv1.Code {
	switch {
	case errors.Is(err, queue.ErrInvalidMessage):
		return clusterv1.Code_CODE_INVALID_ARGUMENT
	case errors.Is(err, queue.ErrUnknownTopic):
		return clusterv1.Code_CODE_UNKNOWN_TOPIC
	case errors.Is(err, queue.ErrDeadline), errors.Is(err, context.DeadlineExceeded):
		return clusterv1.Code_CODE_DEADLINE_EXCEEDED
	case errors.Is(err, queue.ErrClosed), errors.Is(err, queue.ErrResourceExhausted), errors.Is(err, context.Canceled):
		return clusterv1.Code_CODE_UNAVAILABLE
	default:
		return clusterv1.Code_CODE_INTERNAL
	}
}

func failure(code clusterv1.Code, format string, args ...any) *clusterv1.Failure {
	return &clusterv1.Failure{Code: code, Reason: fmt.Sprintf(format, args...)}
}

func ackFrame(a *clusterv1.Ack) *clusterv1.StreamResponse {
	return &clusterv1.StreamResponse{Frame: &clusterv1.StreamResponse_Ack{Ack: a}}
}
