package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/queuetest"
)

func newLocal(t testing.TB, cfg queue.LocalConfig) *queue.Local {
	t.Helper()
	q := queue.NewLocal(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return q
}

func TestLocalContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) (queue.Client, queue.Server) {
		q := newLocal(t, queue.LocalConfig{NodeName: "solo"})
		return q, q
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLocalSubscribe(t *testing.T) {
	q := newLocal(t, queue.LocalConfig{})
	nop := queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result { return queue.Result{} })
	if err := q.Subscribe("t", nop); err != nil {
		t.Fatal(err)
	}
	if err := q.Subscribe("t", nop); err == nil {
		t.Fatal("second listener for one topic accepted")
	}
	if err := q.Subscribe("", nop); err == nil {
		t.Fatal("empty topic accepted")
	}
	if err := q.Subscribe("u", nil); err == nil {
		t.Fatal("nil listener accepted")
	}
}

func TestLocalStopRefusesWork(t *testing.T) {
	q := queue.NewLocal(queue.LocalConfig{})
	nop := queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result { return queue.Result{} })
	if err := q.Subscribe("t", nop); err != nil {
		t.Fatal(err)
	}
	p := q.NewBatchPublisher(time.Second)
	defer p.Close()
	if err := q.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := p.Publish(ctx, "t", queue.Message{Payload: []byte("x")}); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Publish after Stop: %v, want ErrClosed", err)
	}
	if _, err := q.Broadcast(ctx, "t", "g", nil); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Broadcast after Stop: %v, want ErrClosed", err)
	}
	if err := q.Subscribe("u", nop); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Subscribe after Stop: %v, want ErrClosed", err)
	}
}

func TestLocalListenerFaults(t *testing.T) {
	tests := []struct {
		name string
		l    queue.ListenerFunc
	}{
		{"panic", func(context.Context, queue.Batch) queue.Result { panic("kaboom") }},
		{"too few errors", func(context.Context, queue.Batch) queue.Result {
			return queue.Result{Errs: []error{}}
		}},
		{"too many replies", func(_ context.Context, b queue.Batch) queue.Result {
			return queue.Result{Replies: make([][]byte, len(b.Messages)+1)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newLocal(t, queue.LocalConfig{})
			if err := q.Subscribe("t", tt.l); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			p := q.NewBatchPublisher(5 * time.Second)
			defer p.Close()
			f, err := p.Publish(ctx, "t", queue.Message{Payload: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Get(ctx); err == nil || ctx.Err() != nil {
				t.Fatalf("Get = %v, want the listener's fault", err)
			}
			replies, err := q.Broadcast(ctx, "t", "g", []byte("x"))
			if err != nil || len(replies) != 1 || replies[0].Err == nil {
				t.Fatalf("Broadcast = %+v, %v; want one failed reply", replies, err)
			}
		})
	}
}

// TestLocalBackpressure: with the listener blocked, Publish blocks once
// MaxPending messages wait, and gives up with ErrResourceExhausted at ctx.
func TestLocalBackpressure(t *testing.T) {
	q := newLocal(t, queue.LocalConfig{MaxBatch: 2, MaxPending: 4})
	release := make(chan struct{})
	var calls atomic.Int32
	if err := q.Subscribe("t", queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result {
		calls.Add(1)
		<-release
		return queue.Result{}
	})); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	p := q.NewBatchPublisher(0)
	var futs []queue.Future
	pub := func(ctx context.Context) error {
		f, err := p.Publish(ctx, "t", queue.Message{Payload: []byte("x")})
		if err == nil {
			futs = append(futs, f)
		}
		return err
	}
	if err := pub(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait until the first batch is in the listener, holding nothing queued.
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("listener never called")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 4 {
		if err := pub(ctx); err != nil {
			t.Fatalf("publish %d within MaxPending: %v", i, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := pub(short); !errors.Is(err, queue.ErrResourceExhausted) {
		t.Fatalf("publish over MaxPending: %v, want ErrResourceExhausted", err)
	}
	close(release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for i, f := range futs {
		if err := f.Get(ctx); err != nil {
			t.Fatalf("future %d: %v", i, err)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("listener called %d times, want 3 (1 + 4 messages in batches of 2)", n)
	}
}

// TestLocalCoalesces: messages published while the listener is busy are
// delivered together.
func TestLocalCoalesces(t *testing.T) {
	q := newLocal(t, queue.LocalConfig{})
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	if err := q.Subscribe("t", queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
		<-release
		mu.Lock()
		sizes = append(sizes, len(b.Messages))
		mu.Unlock()
		return queue.Result{}
	})); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	p := q.NewBatchPublisher(10 * time.Second)
	for i := range 101 {
		if _, err := p.Publish(ctx, "t", queue.Message{Payload: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range sizes {
		total += n
	}
	if total != 101 || len(sizes) > 2 {
		t.Fatalf("batch sizes %v: want 101 messages in at most 2 batches", sizes)
	}
}
