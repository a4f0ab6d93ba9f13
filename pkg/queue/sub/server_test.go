package sub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/wire"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const topic = queue.TopicStreamWrite

func TestHandshake(t *testing.T) {
	ts := startServer(t, sub.Config{MaxRecvMsgSize: 1 << 20}, nil)
	conn := dial(t, ts.addr, nil)

	ha := openStream(t, conn).handshake()
	if ha.GetProtocolVersion() != 1 || ha.GetNodeName() != nodeName || ha.GetMaxBatchBytes() != 1<<20 {
		t.Fatalf("HelloAck = %v, want version 1, node %q, max_batch_bytes %d", ha, nodeName, 1<<20)
	}

	// A newer publisher is answered with the version both speak.
	r := openStream(t, conn)
	r.hello(7)
	if v := r.recv().GetHelloAck().GetProtocolVersion(); v != 1 {
		t.Fatalf("HelloAck to a version 7 publisher: version %d, want 1", v)
	}
}

func TestProtocolErrors(t *testing.T) {
	ts := startServer(t, sub.Config{}, map[queue.Topic]queue.Listener{topic: nop})
	conn := dial(t, ts.addr, nil)
	tests := []struct {
		name     string
		frames   func(r *rawStream)
		code     codes.Code
		contains []string
	}{
		{
			name:     "incompatible version",
			frames:   func(r *rawStream) { r.hello(0) },
			code:     codes.FailedPrecondition,
			contains: []string{"version 0", "version 1"},
		},
		{
			name:     "batch before hello",
			frames:   func(r *rawStream) { r.batch(1, topic, time.Time{}, []byte("x")) },
			code:     codes.InvalidArgument,
			contains: []string{"first frame must be Hello"},
		},
		{
			name: "second hello",
			frames: func(r *rawStream) {
				r.handshake()
				r.hello(1)
			},
			code:     codes.InvalidArgument,
			contains: []string{"second Hello"},
		},
		{
			name: "empty frame",
			frames: func(r *rawStream) {
				r.handshake()
				r.send(&clusterv1.StreamRequest{})
			},
			code:     codes.InvalidArgument,
			contains: []string{"empty frame"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openStream(t, conn)
			tt.frames(r)
			err := r.wantEnd(tt.code)
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
	// The server still serves new streams.
	openStream(t, conn).handshake()
}

// echoListener answers each message m with "re:" + m.
func echoListener() queue.Listener {
	return queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
		res := queue.Result{Replies: make([][]byte, len(b.Messages))}
		for i, m := range b.Messages {
			res.Replies[i] = append([]byte("re:"), m...)
		}
		return res
	})
}

func TestAcks(t *testing.T) {
	echo := echoListener()
	failing := queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
		res := queue.Result{Errs: make([]error, len(b.Messages))}
		for i, m := range b.Messages {
			switch {
			case bytes.HasPrefix(m, []byte("bad")):
				res.Errs[i] = fmt.Errorf("cannot decode: %w", queue.ErrInvalidMessage)
			case bytes.HasPrefix(m, []byte("err")):
				res.Errs[i] = errors.New("disk on fire")
			}
		}
		return res
	})
	panicky := queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
		if string(b.Messages[0]) == "panic" {
			panic("listener bug")
		}
		return queue.Result{}
	})
	ts := startServer(t, sub.Config{MaxBatchMessages: 3}, map[queue.Topic]queue.Listener{
		"echo": echo, "failing": failing, "panicky": panicky, "gate": newGate(t),
	})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()

	msgs := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	failed := func(code clusterv1.Code) func(*testing.T, *clusterv1.Ack) {
		return func(t *testing.T, a *clusterv1.Ack) {
			if a.GetBatchFailure().GetCode() != code || len(a.GetFailures()) != 0 {
				t.Fatalf("ack %v, want batch failure %v", a, code)
			}
		}
	}
	tests := []struct {
		name     string
		topic    queue.Topic
		msgs     [][]byte
		deadline time.Time
		check    func(*testing.T, *clusterv1.Ack)
	}{
		{"replies", "echo", msgs("a", "b"), time.Time{}, func(t *testing.T, a *clusterv1.Ack) {
			if a.GetBatchFailure() != nil || len(a.GetFailures()) != 0 || len(a.GetReplies()) != 2 ||
				string(a.GetReplies()[0]) != "re:a" || string(a.GetReplies()[1]) != "re:b" {
				t.Fatalf("ack %v, want replies re:a, re:b", a)
			}
		}},
		{"per-message failures", "failing", msgs("ok", "bad", "err"), time.Time{}, func(t *testing.T, a *clusterv1.Ack) {
			f := a.GetFailures()
			if a.GetBatchFailure() != nil || len(f) != 2 ||
				f[0].GetIndex() != 1 || f[0].GetFailure().GetCode() != clusterv1.Code_CODE_INVALID_ARGUMENT ||
				f[1].GetIndex() != 2 || f[1].GetFailure().GetCode() != clusterv1.Code_CODE_INTERNAL ||
				!strings.Contains(f[1].GetFailure().GetReason(), "disk on fire") {
				t.Fatalf("ack %v, want message 1 INVALID_ARGUMENT and message 2 INTERNAL", a)
			}
		}},
		{"unknown topic", "nobody", msgs("x"), time.Time{}, failed(clusterv1.Code_CODE_UNKNOWN_TOPIC)},
		{"too many messages", "echo", msgs("1", "2", "3", "4"), time.Time{}, failed(clusterv1.Code_CODE_TOO_LARGE)},
		// The gate would block forever: the listener must not be called.
		{"past deadline", "gate", msgs("x"), time.Now().Add(-time.Second), failed(clusterv1.Code_CODE_DEADLINE_EXCEEDED)},
		{"panicking listener", "panicky", msgs("panic"), time.Time{}, failed(clusterv1.Code_CODE_INTERNAL)},
		{"stream goes on after a panic", "panicky", msgs("fine"), time.Time{}, func(t *testing.T, a *clusterv1.Ack) {
			if a.GetBatchFailure() != nil || len(a.GetFailures()) != 0 {
				t.Fatalf("ack %v, want success", a)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := uint64(100 + i)
			r.batch(id, tt.topic, tt.deadline, tt.msgs...)
			a := r.ack()
			if a.GetBatchId() != id {
				t.Fatalf("ack for batch %d, want %d", a.GetBatchId(), id)
			}
			tt.check(t, a)
		})
	}
}

// TestRepliesBeyondTheBoundFailAlone: of a batch whose replies would take
// the ack past MaxReplyBytes, the message whose reply crosses the bound
// fails with CODE_RESOURCE_EXHAUSTED and sends no reply; the others are
// answered, and the stream goes on.
func TestRepliesBeyondTheBoundFailAlone(t *testing.T) {
	echo := echoListener()
	ts := startServer(t, sub.Config{MaxReplyBytes: 12}, map[queue.Topic]queue.Listener{"echo": echo})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	r.batch(1, "echo", time.Time{}, []byte("aaaa"), []byte("bbbbbbbbbb"), []byte("c"))
	a := r.ack()
	f := a.GetFailures()
	if a.GetBatchFailure() != nil || len(f) != 1 || f[0].GetIndex() != 1 ||
		f[0].GetFailure().GetCode() != clusterv1.Code_CODE_RESOURCE_EXHAUSTED || !strings.Contains(f[0].GetFailure().GetReason(), "13 bytes") {
		t.Fatalf("ack %v, want message 1 failed RESOURCE_EXHAUSTED naming its 13 bytes", a)
	}
	if rs := a.GetReplies(); len(rs) != 3 || string(rs[0]) != "re:aaaa" || len(rs[1]) != 0 || string(rs[2]) != "re:c" {
		t.Fatalf("replies %q, want re:aaaa, none, re:c", rs)
	}
	r.batch(2, "echo", time.Time{}, []byte("d"))
	if a := r.ack(); a.GetBatchId() != 2 || len(a.GetFailures()) != 0 || string(a.GetReplies()[0]) != "re:d" {
		t.Fatalf("the next batch: %v", a)
	}
}

// keyed is a listener that blocks each batch until its first message's key
// is released.
type keyed struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func (k *keyed) ch(key string) chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.waiting[key] == nil {
		k.waiting[key] = make(chan struct{})
	}
	return k.waiting[key]
}

func (k *keyed) Handle(ctx context.Context, b queue.Batch) queue.Result {
	select {
	case <-k.ch(string(b.Messages[0])):
	case <-ctx.Done():
	}
	return queue.Result{}
}

func (k *keyed) inside() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.waiting)
}

// TestPipelining: several batches are in listeners at once and their acks
// come back in completion order, matched by id.
func TestPipelining(t *testing.T) {
	k := &keyed{waiting: make(map[string]chan struct{})}
	ts := startServer(t, sub.Config{ListenerWorkers: 4}, map[queue.Topic]queue.Listener{topic: k})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	for id := uint64(1); id <= 4; id++ {
		r.batch(id, topic, time.Time{}, fmt.Appendf(nil, "b%d", id))
	}
	poll.Until(t, "4 batches in the listener at once", func() bool { return k.inside() == 4 })
	for _, id := range []uint64{3, 1, 4, 2} {
		close(k.ch(fmt.Sprintf("b%d", id)))
		if a := r.ack(); a.GetBatchId() != id || a.GetBatchFailure() != nil {
			t.Fatalf("ack %v, want success of batch %d", a, id)
		}
	}
	// Half-closing the stream ends it cleanly.
	if err := r.s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.recvErr(); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("after CloseSend: %v, want EOF", err)
	}
}

// TestHalfCloseFlushesAcks: a publisher that half-closes still gets the
// acks of the batches it sent.
func TestHalfCloseFlushesAcks(t *testing.T) {
	g := newGate(t)
	ts := startServer(t, sub.Config{}, map[queue.Topic]queue.Listener{topic: g})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	r.batch(1, topic, time.Time{}, []byte("x"))
	r.batch(2, topic, time.Time{}, []byte("y"))
	if err := r.s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "both batches in the listener", func() bool { n, _ := g.counts(); return n == 2 })
	g.open()
	got := map[uint64]bool{r.ack().GetBatchId(): true, r.ack().GetBatchId(): true}
	if !got[1] || !got[2] {
		t.Fatalf("acks for %v, want 1 and 2", got)
	}
}

// TestBadFrames: an undecodable or oversized frame ends its own stream;
// other streams, even on the same connection, keep being served.
func TestBadFrames(t *testing.T) {
	ts := startServer(t, sub.Config{MaxRecvMsgSize: 64 << 10}, map[queue.Topic]queue.Listener{topic: nop})
	conn := dial(t, ts.addr, nil)
	other := openStream(t, conn)
	other.handshake()

	t.Run("oversized", func(t *testing.T) {
		r := openStream(t, conn)
		r.handshake()
		r.batch(1, topic, time.Time{}, make([]byte, 100<<10))
		r.wantEnd(codes.ResourceExhausted)
	})
	t.Run("garbage", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		desc := &grpc.StreamDesc{StreamName: "Stream", ServerStreams: true, ClientStreams: true}
		s, err := conn.NewStream(ctx, desc, clusterv1.QueueService_Stream_FullMethodName, grpc.ForceCodecV2(wire.Codec()))
		if err != nil {
			t.Fatal(err)
		}
		garbage := &wire.Frame{Raw: []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99}}
		if err := s.SendMsg(garbage); err != nil {
			t.Fatal(err)
		}
		var resp wire.Frame
		if err := s.RecvMsg(&resp); err == nil {
			t.Fatalf("garbage frame answered with %x, want the stream to end", resp.Raw)
		}
	})
	other.batch(7, topic, time.Time{}, []byte("still here"))
	if a := other.ack(); a.GetBatchId() != 7 || a.GetBatchFailure() != nil {
		t.Fatalf("ack %v on the other stream, want success of batch 7", a)
	}
	openStream(t, conn).handshake()
}

func TestSubscribe(t *testing.T) {
	s := sub.New(sub.Config{}, nil)
	if err := s.Subscribe(topic, nop); err != nil {
		t.Fatal(err)
	}
	if err := s.Subscribe(topic, nop); err == nil {
		t.Fatal("second listener for a topic accepted")
	}
	if err := s.Subscribe("", nop); err == nil {
		t.Fatal("empty topic accepted")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Serve: %v", err)
	}
	if err := s.Subscribe("late", nop); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Subscribe after Stop: %v, want ErrClosed", err)
	}
	if err := (sub.Config{ListenerWorkers: -1}).Validate(); err == nil {
		t.Fatal("negative ListenerWorkers validated")
	}
}

// TestMessagesStableWhileListening: frame buffers are reused, but never
// while a listener may still read the batch. One batch is held in its
// listener while many others of the same size are received, handled and
// acked (their buffers going back to the pool and out again); the held
// batch's messages are unchanged when it returns.
func TestMessagesStableWhileListening(t *testing.T) {
	hold := make(chan struct{})
	changed := make(chan bool, 1)
	l := queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
		if !bytes.HasPrefix(b.Messages[0], []byte("hold")) {
			return queue.Result{}
		}
		before := make([][]byte, len(b.Messages))
		for i, m := range b.Messages {
			before[i] = bytes.Clone(m)
		}
		<-hold
		same := true
		for i, m := range b.Messages {
			same = same && bytes.Equal(m, before[i])
		}
		changed <- !same
		return queue.Result{}
	})
	ts := startServer(t, sub.Config{ListenerWorkers: 4}, map[queue.Topic]queue.Listener{topic: l})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	msgs := func(prefix string, fill byte) [][]byte {
		out := make([][]byte, 4)
		for i := range out {
			out[i] = append([]byte(prefix), bytes.Repeat([]byte{fill}, 3000)...)
		}
		return out
	}
	r.batch(1, topic, time.Time{}, msgs("hold", 'a')...)
	for id := uint64(2); id <= 40; id++ {
		r.batch(id, topic, time.Time{}, msgs("pass", byte('b'+id%20))...)
		if a := r.ack(); a.GetBatchId() != id || a.GetBatchFailure() != nil {
			t.Fatalf("ack %v, want success of batch %d", a, id)
		}
	}
	close(hold)
	if a := r.ack(); a.GetBatchId() != 1 {
		t.Fatalf("ack %v, want batch 1", a)
	}
	if <-changed {
		t.Fatal("the held batch's messages changed while its listener ran")
	}
}
