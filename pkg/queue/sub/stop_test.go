package sub_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
)

// healthWatch follows the QueueService health status of a server.
type healthWatch struct {
	t       *testing.T
	updates chan healthpb.HealthCheckResponse_ServingStatus
}

func watchHealth(t *testing.T, ts *testServer) *healthWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := healthpb.NewHealthClient(dial(t, ts.addr, nil)).Watch(ctx,
		&healthpb.HealthCheckRequest{Service: clusterv1.QueueService_ServiceDesc.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	hw := &healthWatch{t: t, updates: make(chan healthpb.HealthCheckResponse_ServingStatus, 16)}
	go func() {
		defer close(hw.updates)
		for {
			resp, err := w.Recv()
			if err != nil {
				return
			}
			hw.updates <- resp.GetStatus()
		}
	}()
	return hw
}

func (hw *healthWatch) want(s healthpb.HealthCheckResponse_ServingStatus) {
	hw.t.Helper()
	select {
	case got := <-hw.updates:
		if got != s {
			hw.t.Fatalf("health %v, want %v", got, s)
		}
	case <-time.After(10 * time.Second):
		hw.t.Fatalf("no health update, want %v", s)
	}
}

// TestGracefulStop: Stop turns health NOT_SERVING, lets the batch in the
// listener finish and be acked, ends the stream with UNAVAILABLE, and only
// then returns.
func TestGracefulStop(t *testing.T) {
	g := newGate(t)
	ts := startServer(t, sub.Config{}, map[queue.Topic]queue.Listener{topic: g})
	hw := watchHealth(t, ts)
	hw.want(healthpb.HealthCheckResponse_SERVING)

	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	r.batch(1, topic, time.Time{}, []byte("x"))
	poll.Until(t, "batch in the listener", func() bool { n, _ := g.counts(); return n == 1 })

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- ts.Stop(ctx)
	}()
	hw.want(healthpb.HealthCheckResponse_NOT_SERVING)
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) with a batch still in the listener", err)
	case <-time.After(50 * time.Millisecond):
	}

	g.open()
	if a := r.ack(); a.GetBatchId() != 1 || a.GetBatchFailure() != nil {
		t.Fatalf("ack %v, want success of batch 1", a)
	}
	r.wantEnd(codes.Unavailable)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return after the last ack")
	}
	if _, canceled := g.counts(); canceled != 0 {
		t.Fatalf("%d listener calls cancelled by a graceful stop", canceled)
	}

	// New streams are refused.
	wantRefused(t, dial(t, ts.addr, nil), codes.Unavailable)
}

// TestForcedStop: a listener that outlives the stop deadline is cancelled
// and Stop reports it.
func TestForcedStop(t *testing.T) {
	g := newGate(t)
	ts := startServer(t, sub.Config{}, map[queue.Topic]queue.Listener{topic: g})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	r.batch(1, topic, time.Time{}, []byte("x"))
	poll.Until(t, "batch in the listener", func() bool { n, _ := g.counts(); return n == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := ts.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 batches") {
		t.Fatalf("Stop = %v, want a deadline error counting 1 batch", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("forced Stop took %v", d)
	}
	poll.Until(t, "listener cancelled", func() bool { _, c := g.counts(); return c == 1 })
	if _, err := r.recvErr(); err == nil {
		t.Fatal("stream still open after a forced stop")
	}
}

// TestStopGrace: StopGrace bounds Stop even when ctx has no deadline.
func TestStopGrace(t *testing.T) {
	g := newGate(t)
	ts := startServer(t, sub.Config{StopGrace: 100 * time.Millisecond}, map[queue.Topic]queue.Listener{topic: g})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	r.batch(1, topic, time.Time{}, []byte("x"))
	poll.Until(t, "batch in the listener", func() bool { n, _ := g.counts(); return n == 1 })
	if err := ts.Stop(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want the StopGrace deadline", err)
	}
}

// TestStopIdle: with only idle streams and health watchers, Stop returns at
// once and every client sees its stream end.
func TestStopIdle(t *testing.T) {
	ts := startServer(t, sub.Config{}, nil)
	hw := watchHealth(t, ts)
	hw.want(healthpb.HealthCheckResponse_SERVING)
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	r.wantEnd(codes.Unavailable)
	// The watch may be cut before NOT_SERVING reaches it; it must not see
	// SERVING again.
	for s := range hw.updates {
		if s != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("health %v after Stop", s)
		}
	}
	if err := ts.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}
