package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
)

var errBoom = errors.New("boom")

// rec is a listener that records the ids it was handed and then fails,
// panics or echoes the payload, as configured.
type rec struct {
	err    error
	panicV any

	mu  sync.Mutex
	ids []uint64
}

func (r *rec) Handle(_ context.Context, m Message) (any, error) {
	r.mu.Lock()
	r.ids = append(r.ids, m.ID)
	r.mu.Unlock()
	if r.panicV != nil {
		panic(r.panicV)
	}
	return m.Payload, r.err
}

func (r *rec) got() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

func msgs(ids ...uint64) []Message {
	out := make([]Message, len(ids))
	for i, id := range ids {
		out[i] = Message{ID: id, Payload: id}
	}
	return out
}

func checkErr(t *testing.T, err error, want []error, wantText []string) {
	t.Helper()
	if len(want) == 0 && err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("error %v: want it to wrap %v", err, w)
		}
	}
	for _, s := range wantText {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v: want it to mention %q", err, s)
		}
	}
}

func TestPublish(t *testing.T) {
	errOther := errors.New("other failure")
	tests := []struct {
		name      string
		listeners []*rec // all subscribed to "t"
		topic     Topic  // published to; "t" if empty
		cancelled bool
		closed    bool
		msgs      []Message
		wantIDs   [][]uint64 // per listener
		wantErr   []error
		wantText  []string
	}{
		{
			name:      "one listener gets every message in order",
			listeners: []*rec{{}},
			msgs:      msgs(1, 2, 3),
			wantIDs:   [][]uint64{{1, 2, 3}},
		},
		{
			name:      "every listener gets every message",
			listeners: []*rec{{}, {}, {}},
			msgs:      msgs(1, 2),
			wantIDs:   [][]uint64{{1, 2}, {1, 2}, {1, 2}},
		},
		{
			name:      "listener errors are joined and do not stop delivery",
			listeners: []*rec{{err: errBoom}, {}, {err: errOther}},
			msgs:      msgs(7),
			wantIDs:   [][]uint64{{7}, {7}, {7}},
			wantErr:   []error{errBoom, errOther},
			wantText:  []string{`topic "t" message 7 listener 0`, "listener 2"},
		},
		{
			name:      "panicking listener is recovered and the others still run",
			listeners: []*rec{{panicV: "kaboom"}, {}},
			msgs:      msgs(1, 2),
			wantIDs:   [][]uint64{{1, 2}, {1, 2}},
			wantErr:   []error{ErrListenerPanic},
			wantText:  []string{"kaboom", `topic "t" message 2`},
		},
		{
			name:      "panic with an error value keeps it in the chain",
			listeners: []*rec{{panicV: errBoom}},
			msgs:      msgs(1),
			wantIDs:   [][]uint64{{1}},
			wantErr:   []error{ErrListenerPanic, errBoom},
		},
		{
			name:      "topic without subscriber",
			listeners: []*rec{{}},
			topic:     "nobody-home",
			msgs:      msgs(1),
			wantIDs:   [][]uint64{nil},
			wantErr:   []error{ErrNoSubscriber},
			wantText:  []string{"nobody-home"},
		},
		{
			name:      "cancelled context delivers nothing",
			listeners: []*rec{{}},
			cancelled: true,
			msgs:      msgs(1),
			wantIDs:   [][]uint64{nil},
			wantErr:   []error{context.Canceled},
		},
		{
			name:      "closed bus delivers nothing",
			listeners: []*rec{{}},
			closed:    true,
			msgs:      msgs(1),
			wantIDs:   [][]uint64{nil},
			wantErr:   []error{ErrClosed},
			wantText:  []string{`"t"`},
		},
		{
			name:      "no messages is a no-op",
			listeners: []*rec{{}},
			wantIDs:   [][]uint64{nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			for _, l := range tt.listeners {
				if err := b.Subscribe("t", l); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			if tt.closed {
				b.Close()
			}
			topic := tt.topic
			if topic == "" {
				topic = "t"
			}
			err := b.Publish(ctx, topic, tt.msgs...)
			checkErr(t, err, tt.wantErr, tt.wantText)
			for i, l := range tt.listeners {
				if got := l.got(); !slices.Equal(got, tt.wantIDs[i]) {
					t.Errorf("listener %d got %v, want %v", i, got, tt.wantIDs[i])
				}
			}
			b.Close()
		})
	}
}

func TestPublishStopsWhenContextIsCancelledMidway(t *testing.T) {
	b := New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := ListenerFunc(func(context.Context, Message) (any, error) {
		cancel()
		return nil, nil
	})
	second := &rec{}
	for _, l := range []Listener{first, second} {
		if err := b.Subscribe("t", l); err != nil {
			t.Fatal(err)
		}
	}
	err := b.Publish(ctx, "t", msgs(1, 2)...)
	checkErr(t, err, []error{context.Canceled}, []string{"after 1 of 4 deliveries"})
	if got := second.got(); len(got) != 0 {
		t.Errorf("listener after cancellation got %v, want nothing", got)
	}
	b.Close()
}

func TestSubscribeRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		topic   Topic
		l       Listener
		closed  bool
		wantErr error
	}{
		{name: "empty topic", topic: "", l: &rec{}},
		{name: "nil listener", topic: "t", l: nil},
		{name: "closed bus", topic: "t", l: &rec{}, closed: true, wantErr: ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			if tt.closed {
				b.Close()
			}
			err := b.Subscribe(tt.topic, tt.l)
			if err == nil {
				t.Fatal("Subscribe succeeded, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Subscribe = %v, want %v", err, tt.wantErr)
			}
			b.Close()
		})
	}
}

// counter counts deliveries and how many are running right now.
type counter struct {
	total  atomic.Int64
	active atomic.Int64
}

func (c *counter) Handle(context.Context, Message) (any, error) {
	c.active.Add(1)
	defer c.active.Add(-1)
	c.total.Add(1)
	return nil, nil
}

func TestConcurrentPublishersAndSubscribers(t *testing.T) {
	const (
		publishers  = 8
		perPub      = 300
		subscribers = 4
		perSub      = 10
	)
	b := New()
	defer b.Close()
	base := &counter{}
	if err := b.Subscribe("t", base); err != nil {
		t.Fatal(err)
	}
	var late []*counter
	var lateMu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, publishers*perPub+subscribers*perSub)
	for p := range publishers {
		wg.Go(func() {
			for i := range perPub {
				if err := b.Publish(context.Background(), "t", Message{ID: uint64(p*perPub + i)}); err != nil {
					errs <- err
				}
			}
		})
	}
	for s := range subscribers {
		wg.Go(func() {
			for i := range perSub {
				c := &counter{}
				topic := Topic("t")
				if i%2 == 1 {
					topic = Topic(fmt.Sprintf("side-%d-%d", s, i))
				}
				if err := b.Subscribe(topic, c); err != nil {
					errs <- err
				}
				if topic == "t" {
					lateMu.Lock()
					late = append(late, c)
					lateMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, want := base.total.Load(), int64(publishers*perPub); got != want {
		t.Errorf("first listener got %d messages, want %d", got, want)
	}
	// Every subscription must have survived the concurrent copy-on-write.
	if err := b.Publish(context.Background(), "t", Message{ID: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	if len(late) != subscribers*perSub/2 {
		t.Fatalf("%d late subscribers, want %d", len(late), subscribers*perSub/2)
	}
	for i, c := range late {
		if c.total.Load() == 0 {
			t.Errorf("late subscriber %d never got a message", i)
		}
	}
}

func TestCloseWhilePublishing(t *testing.T) {
	b := New()
	c := &counter{}
	if err := b.Subscribe("t", c); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				err := b.Publish(context.Background(), "t", msgs(1, 2)...)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	poll.Until(t, "some deliveries", func() bool { return c.total.Load() > 100 })
	b.Close()
	// Close returned: nothing may still be running, and nothing new starts.
	if n := c.active.Load(); n != 0 {
		t.Errorf("%d deliveries still running after Close returned", n)
	}
	after := c.total.Load()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := c.total.Load(); got != after {
		t.Errorf("%d deliveries happened after Close returned", got-after)
	}
}

func TestCloseWaitsForInFlightDelivery(t *testing.T) {
	b := New()
	entered := make(chan struct{})
	release := make(chan struct{})
	if err := b.Subscribe("slow", ListenerFunc(func(context.Context, Message) (any, error) {
		close(entered)
		<-release
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("probe", &counter{}); err != nil {
		t.Fatal(err)
	}
	pubErr := make(chan error, 1)
	go func() { pubErr <- b.Publish(context.Background(), "slow", Message{ID: 1}) }()
	<-entered

	closed := make(chan struct{})
	go func() {
		b.Close()
		close(closed)
	}()
	poll.Until(t, "the bus to refuse new messages", func() bool {
		return errors.Is(b.Publish(context.Background(), "probe", Message{ID: 2}), ErrClosed)
	})
	select {
	case <-closed:
		t.Fatal("Close returned while a delivery was still running")
	default:
	}
	close(release)
	<-closed
	if err := <-pubErr; err != nil {
		t.Fatalf("in-flight Publish = %v, want nil", err)
	}
}

func TestShutdownGivesUpAtDeadline(t *testing.T) {
	b := New()
	entered := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	if err := b.Subscribe("slow", ListenerFunc(func(context.Context, Message) (any, error) {
		close(entered)
		<-release
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	f, err := b.PublishFuture(context.Background(), "slow", Message{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = b.Shutdown(ctx)
	checkErr(t, err, []error{context.DeadlineExceeded}, []string{"1 deliveries still running"})
	if _, err := b.PublishFuture(context.Background(), "slow", Message{ID: 2}); !errors.Is(err, ErrClosed) {
		t.Fatalf("PublishFuture after Shutdown = %v, want ErrClosed", err)
	}
	_ = f // the abandoned request finishes when release is closed
}
