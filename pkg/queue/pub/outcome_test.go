package pub_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// scripted is a data node whose acks a test writes: onBatch gets the
// stream's session number (1 for the first stream opened) and a batch, and
// returns the ack to send, or nil to break the stream without one.
type scripted struct {
	clusterv1.UnimplementedQueueServiceServer
	sessions atomic.Int64
	onBatch  func(session int64, b *clusterv1.Batch) *clusterv1.Ack

	mu   sync.Mutex
	seen map[string]int // payloads of acked messages
}

// Stream numbers its sessions by their first batch, so that the
// publisher's idle request stream takes no number.
func (s *scripted) Stream(st clusterv1.QueueService_StreamServer) error {
	var session int64
	req, err := st.Recv()
	if err != nil {
		return err
	}
	if req.GetHello() == nil {
		return status.Error(codes.InvalidArgument, "first frame is not a Hello")
	}
	if err := st.Send(&clusterv1.StreamResponse{Frame: &clusterv1.StreamResponse_HelloAck{
		HelloAck: &clusterv1.HelloAck{ProtocolVersion: 1, NodeName: "scripted"}}}); err != nil {
		return err
	}
	for {
		req, err := st.Recv()
		if err != nil {
			return err
		}
		b := req.GetBatch()
		if session == 0 {
			session = s.sessions.Add(1)
		}
		ack := s.onBatch(session, b)
		if ack == nil {
			return status.Error(codes.Unavailable, "scripted: stream broken")
		}
		if ack.GetBatchFailure() == nil && len(ack.GetFailures()) == 0 {
			s.mu.Lock()
			for _, m := range b.GetMessages() {
				s.seen[string(m)]++
			}
			s.mu.Unlock()
		}
		ack.BatchId = b.GetBatchId()
		if err := st.Send(&clusterv1.StreamResponse{Frame: &clusterv1.StreamResponse_Ack{Ack: ack}}); err != nil {
			return err
		}
	}
}

func (s *scripted) has(payload string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[payload] > 0
}

// startScripted serves s as the only node of the placement table.
func startScripted(t *testing.T, s *scripted) *route.Router {
	t.Helper()
	s.seen = map[string]int{}
	gs := grpc.NewServer()
	clusterv1.RegisterQueueServiceServer(gs, s)
	addr := startRaw(t, gs)
	r := route.NewRouter()
	if _, err := r.Update([]route.Node{{Name: "scripted", Addr: addr}},
		[]route.Group{{Name: group, ShardNum: shardNum}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitAll starts a Get on every future, so that some are waiting when
// their messages move, and returns what each Get returned.
func waitAll(msgs []sent) func() []error {
	errs := make([]error, len(msgs))
	var wg sync.WaitGroup
	for i, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), waitMax)
			defer cancel()
			errs[i] = m.f.Get(ctx)
		}()
	}
	return func() []error {
		wg.Wait()
		return errs
	}
}

// TestRequeuedFromBrokenStreamResolvesOnce: messages whose stream broke
// before their batch was acked are resent in new batches; each future,
// whether its Get was already waiting or not, resolves once, acked, and
// the node gets every payload intact.
func TestRequeuedFromBrokenStreamResolvesOnce(t *testing.T) {
	gate := make(chan struct{})
	s := &scripted{onBatch: func(session int64, _ *clusterv1.Batch) *clusterv1.Ack {
		if session == 1 {
			<-gate
			return nil
		}
		return &clusterv1.Ack{}
	}}
	cfg := fastConfig()
	cfg.StreamsPerNode = 1
	cfg.MaxBatchMessages = 16 // several batches in flight when the stream breaks
	c := newClient(t, cfg, startScripted(t, s))
	p := c.NewBatchPublisher(waitMax)
	msgs := publishN(context.Background(), t, p, "m", 300)
	waited := waitAll(msgs[:150])
	close(gate)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	for i, err := range waited() {
		if err != nil {
			t.Fatalf("waiting Get of %s: %v, want nil", msgs[i].payload, err)
		}
	}
	for _, m := range acked {
		if !s.has(m.payload) {
			t.Fatalf("%s acked but the node never got its payload", m.payload)
		}
	}
	if st := c.Stats(); st.Reconnects == 0 {
		t.Fatalf("stream never reopened; stats %+v", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAckAfterDeadlineStaysDeadline: messages that timed out in flight
// keep ErrDeadline when the node acks their batch afterwards, and the
// publisher's count stays exact (Close returns, later messages ack).
func TestAckAfterDeadlineStaysDeadline(t *testing.T) {
	var hold atomic.Bool
	hold.Store(true)
	gate := make(chan struct{})
	s := &scripted{onBatch: func(int64, *clusterv1.Batch) *clusterv1.Ack {
		if hold.Load() {
			<-gate
		}
		return &clusterv1.Ack{}
	}}
	c := newClient(t, fastConfig(), startScripted(t, s))
	p := c.NewBatchPublisher(100 * time.Millisecond)
	msgs := publishN(context.Background(), t, p, "m", 200)
	waited := waitAll(msgs)
	for i, err := range waited() {
		if !errors.Is(err, queue.ErrDeadline) {
			t.Fatalf("%s: %v, want ErrDeadline", msgs[i].payload, err)
		}
	}
	hold.Store(false)
	close(gate) // the late ack arrives now
	// The first message went at once and timed out in flight (the rest
	// waited behind it and timed out queued, never sent).
	poll.Until(t, "the late ack", func() bool { return s.has(msgs[0].payload) })
	_, failed := outcomes(t, msgs)
	if len(failed) != len(msgs) {
		t.Fatalf("%d of %d failed after the late ack, want all", len(failed), len(msgs))
	}
	more := publishN(context.Background(), t, p, "after", 50)
	if _, failed := outcomes(t, more); len(failed) > 0 {
		t.Fatalf("%d failed after the node recovered, e.g. %s", len(failed), first(failed))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRetriedMessageKeepsPayload: a batch failed as unavailable is retried
// and its messages arrive with their payloads.
func TestRetriedMessageKeepsPayload(t *testing.T) {
	var failedOnce atomic.Bool
	s := &scripted{onBatch: func(int64, *clusterv1.Batch) *clusterv1.Ack {
		if failedOnce.CompareAndSwap(false, true) {
			return &clusterv1.Ack{BatchFailure: &clusterv1.Failure{
				Code: clusterv1.Code_CODE_UNAVAILABLE, Reason: "scripted: try again"}}
		}
		return &clusterv1.Ack{}
	}}
	cfg := fastConfig()
	cfg.MaxBatchMessages = 16
	c := newClient(t, cfg, startScripted(t, s))
	p := c.NewBatchPublisher(waitMax)
	msgs := publishN(context.Background(), t, p, "m", 100)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	for _, m := range acked {
		if !s.has(m.payload) {
			t.Fatalf("%s acked but the node never got its payload", m.payload)
		}
	}
	if !failedOnce.Load() {
		t.Fatal("no batch was failed: the retry path did not run")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
