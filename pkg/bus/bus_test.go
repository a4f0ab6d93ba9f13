package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/bus"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/queuetest"
)

func newBus(t testing.TB, cfg bus.Config) *bus.Bus {
	t.Helper()
	b := bus.New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return b
}

func TestContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) (queue.Client, queue.Server) {
		b := newBus(t, bus.Config{NodeName: "solo"})
		return b, b
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var nop = queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result { return queue.Result{} })

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg bus.Config
		ok  bool
	}{
		{bus.Config{}, true},
		{bus.Config{MaxBatch: 8, MaxPending: 2}, true}, // MaxPending is raised to MaxBatch
		{bus.Config{MaxBatch: -1}, false},
		{bus.Config{MaxPending: -1}, false},
	} {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate = %v, want ok %v", tt.cfg, err, tt.ok)
		}
	}
}

func TestSubscribe(t *testing.T) {
	b := newBus(t, bus.Config{})
	if err := b.Subscribe("t", nop); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("t", nop); err == nil {
		t.Fatal("second listener for one topic accepted")
	}
	if err := b.Subscribe("", nop); err == nil {
		t.Fatal("empty topic accepted")
	}
	if err := b.Subscribe("u", nil); err == nil {
		t.Fatal("nil listener accepted")
	}
}

// TestBatchIsHandedOverAsPublished: the listener gets the publisher's own
// payload slices, marked Local, with no copy in between.
func TestBatchIsHandedOverAsPublished(t *testing.T) {
	b := newBus(t, bus.Config{})
	got := make(chan queue.Batch, 1)
	if err := b.Subscribe("t", queue.ListenerFunc(func(_ context.Context, batch queue.Batch) queue.Result {
		got <- batch
		return queue.Result{}
	})); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	p := b.NewBatchPublisher(time.Second)
	defer p.Close()
	payload := []byte("as it is")
	f, err := p.Publish(ctx, "t", queue.Message{Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Get(ctx); err != nil {
		t.Fatal(err)
	}
	batch := <-got
	if !batch.Local || batch.Topic != "t" || len(batch.Messages) != 1 {
		t.Fatalf("batch = %+v, want one Local message of topic t", batch)
	}
	if &batch.Messages[0][0] != &payload[0] {
		t.Fatal("the listener got a copy of the payload, want the publisher's slice")
	}
}

func TestStopRefusesWork(t *testing.T) {
	b := bus.New(bus.Config{})
	if err := b.Subscribe("t", nop); err != nil {
		t.Fatal(err)
	}
	p := b.NewBatchPublisher(time.Second)
	defer p.Close()
	if err := b.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := p.Publish(ctx, "t", queue.Message{Payload: []byte("x")}); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Publish after Stop: %v, want ErrClosed", err)
	}
	if _, err := b.Broadcast(ctx, "t", "g", nil); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Broadcast after Stop: %v, want ErrClosed", err)
	}
	if err := b.Subscribe("u", nop); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Subscribe after Stop: %v, want ErrClosed", err)
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestStopWaitsForListeners: Stop returns only once the batch in a
// listener has returned, and gives up at its ctx, saying how many it left.
func TestStopWaitsForListeners(t *testing.T) {
	b := bus.New(bus.Config{})
	entered := make(chan struct{})
	release := make(chan struct{})
	if err := b.Subscribe("t", queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result {
		close(entered)
		<-release
		return queue.Result{}
	})); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	p := b.NewBatchPublisher(0)
	f, err := p.Publish(ctx, "t", queue.Message{Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.Stop(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop with a listener still running = %v, want DeadlineExceeded", err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- b.Stop(ctx) }()
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop after the listener returned: %v", err)
	}
	if err := f.Get(ctx); err != nil {
		t.Fatalf("the batch in the listener at Stop: %v, want it acked", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestListenerFaults(t *testing.T) {
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
			b := newBus(t, bus.Config{})
			if err := b.Subscribe("t", tt.l); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			p := b.NewBatchPublisher(5 * time.Second)
			defer p.Close()
			f, err := p.Publish(ctx, "t", queue.Message{Payload: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Get(ctx); err == nil || ctx.Err() != nil {
				t.Fatalf("Get = %v, want the listener's fault", err)
			}
			replies, err := b.Broadcast(ctx, "t", "g", []byte("x"))
			if err != nil || len(replies) != 1 || replies[0].Err == nil {
				t.Fatalf("Broadcast = %+v, %v; want one failed reply", replies, err)
			}
		})
	}
}

// TestBackpressure: with the listener blocked, Publish blocks once
// MaxPending messages wait, and gives up with ErrResourceExhausted at ctx.
func TestBackpressure(t *testing.T) {
	b := newBus(t, bus.Config{MaxBatch: 2, MaxPending: 4})
	release := make(chan struct{})
	var calls atomic.Int32
	if err := b.Subscribe("t", queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result {
		calls.Add(1)
		<-release
		return queue.Result{}
	})); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	p := b.NewBatchPublisher(0)
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
	// Once the first batch is in the listener, nothing is queued.
	poll.Until(t, "the listener to be called", func() bool { return calls.Load() > 0 })
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

// TestCoalesces: messages published while the listener is busy are
// delivered together, each future matched to its own message's outcome.
func TestCoalesces(t *testing.T) {
	b := newBus(t, bus.Config{})
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	errOdd := errors.New("odd")
	if err := b.Subscribe("t", queue.ListenerFunc(func(_ context.Context, batch queue.Batch) queue.Result {
		<-release
		mu.Lock()
		sizes = append(sizes, len(batch.Messages))
		mu.Unlock()
		res := queue.Result{Errs: make([]error, len(batch.Messages))}
		for i, m := range batch.Messages {
			var n int
			if _, err := fmt.Sscan(string(m), &n); err != nil || n%2 == 1 {
				res.Errs[i] = errOdd
			}
		}
		return res
	})); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	p := b.NewBatchPublisher(10 * time.Second)
	futs := make([]queue.Future, 101)
	for i := range futs {
		f, err := p.Publish(ctx, "t", queue.Message{Payload: fmt.Appendf(nil, "%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		futs[i] = f
	}
	close(release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for i, f := range futs {
		if err := f.Get(ctx); errors.Is(err, errOdd) != (i%2 == 1) {
			t.Fatalf("future %d = %v: not its own message's outcome", i, err)
		}
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
