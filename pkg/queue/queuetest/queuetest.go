// Package queuetest is the contract test suite every queue implementation
// must pass: the in-process bus (pkg/bus), and the gRPC publisher paired
// with the gRPC subscriber. An implementation's test calls Run with a
// factory that builds a connected pair.
package queuetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// What the suite publishes. A remote factory must make Group placeable
// (e.g. register it with a shard count) before returning.
const (
	Group = "queuetest"
	// TopicWrite and TopicQuery are subscribed by the tests; TopicUnsubscribed
	// never is.
	TopicWrite        = queue.TopicStreamWrite
	TopicQuery        = queue.TopicStreamQuery
	TopicUnsubscribed = queue.TopicMeasureWrite
)

// Factory returns a fresh client and a server it delivers to, with nothing
// subscribed yet. Each subtest calls it once; it registers its own cleanup
// with t.Cleanup. Subscriptions are made after it returns, so the server must
// accept Subscribe while serving.
type Factory func(t *testing.T) (queue.Client, queue.Server)

// waitLimit bounds every wait of the suite: long enough never to fire on a
// slow machine, short enough that a hung implementation fails quickly.
const waitLimit = 20 * time.Second

// Run runs the contract suite as subtests of t.
func Run(t *testing.T, newPair Factory) {
	t.Run("ConcurrentPublish", func(t *testing.T) { testConcurrentPublish(t, newPair) })
	t.Run("PerMessageFailures", func(t *testing.T) { testPerMessageFailures(t, newPair) })
	t.Run("UnknownTopic", func(t *testing.T) { testUnknownTopic(t, newPair) })
	t.Run("Deadline", func(t *testing.T) { testDeadline(t, newPair) })
	t.Run("Broadcast", func(t *testing.T) { testBroadcast(t, newPair) })
	t.Run("CloseWaitsForAcks", func(t *testing.T) { testCloseWaits(t, newPair) })
	t.Run("PublishAfterClose", func(t *testing.T) { testPublishAfterClose(t, newPair) })
	t.Run("PayloadReusableAfterAck", func(t *testing.T) { testPayloadReusableAfterAck(t, newPair) })
}

// recorder is a listener that records every payload it was handed.
type recorder struct {
	mu   sync.Mutex
	seen map[string]int
	fail func(payload []byte) error // nil: all succeed
}

func newRecorder(fail func([]byte) error) *recorder {
	return &recorder{seen: make(map[string]int), fail: fail}
}

func (r *recorder) Handle(_ context.Context, b queue.Batch) queue.Result {
	var res queue.Result
	r.mu.Lock()
	for _, m := range b.Messages {
		r.seen[string(m)]++
	}
	r.mu.Unlock()
	if r.fail == nil {
		return res
	}
	for i, m := range b.Messages {
		if err := r.fail(m); err != nil {
			if res.Errs == nil {
				res.Errs = make([]error, len(b.Messages))
			}
			res.Errs[i] = err
		}
	}
	return res
}

func (r *recorder) count(payload string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[payload]
}

// countPrefix counts the messages seen that start with prefix.
func (r *recorder) countPrefix(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := 0
	for m, c := range r.seen {
		if strings.HasPrefix(m, prefix) {
			k += c
		}
	}
	return k
}

func msg(payload string) queue.Message {
	return queue.Message{Group: Group, Payload: []byte(payload)}
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func subscribe(t *testing.T, s queue.Server, topic queue.Topic, l queue.Listener) {
	t.Helper()
	if err := s.Subscribe(topic, l); err != nil {
		t.Fatalf("Subscribe(%q): %v", topic, err)
	}
}

func publish(ctx context.Context, t *testing.T, p queue.BatchPublisher, topic queue.Topic, payload string) queue.Future {
	t.Helper()
	f, err := p.Publish(ctx, topic, msg(payload))
	if err != nil {
		t.Fatalf("Publish(%q, %q): %v", topic, payload, err)
	}
	return f
}

// getTwice resolves f and checks that a second Get reports the same outcome:
// a future resolves exactly once.
func getTwice(ctx context.Context, t *testing.T, what string, f queue.Future) error {
	t.Helper()
	err := f.Get(ctx)
	if ctx.Err() != nil {
		t.Fatalf("%s: future did not resolve within %v", what, waitLimit)
	}
	again := f.Get(ctx)
	if (err == nil) != (again == nil) || (err != nil && err.Error() != again.Error()) {
		t.Fatalf("%s: future resolved twice differently: %v, then %v", what, err, again)
	}
	return err
}

// recordedWrites is a fresh pair whose TopicWrite listener records every
// message and accepts it, and a publisher on it, closed at cleanup.
func recordedWrites(t *testing.T, newPair Factory) (queue.BatchPublisher, *recorder, context.Context) {
	c, s := newPair(t)
	rec := newRecorder(nil)
	subscribe(t, s, TopicWrite, rec)
	p := c.NewBatchPublisher(10 * time.Second)
	t.Cleanup(func() { _ = p.Close() })
	return p, rec, waitCtx(t)
}

func testConcurrentPublish(t *testing.T, newPair Factory) {
	p, rec, ctx := recordedWrites(t, newPair)

	const goroutines, perG = 8, 1000
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			futs := make([]queue.Future, 0, perG)
			for i := range perG {
				f, err := p.Publish(ctx, TopicWrite, msg(fmt.Sprintf("g%d-m%d", g, i)))
				if err != nil {
					errs <- fmt.Errorf("publish g%d-m%d: %w", g, i, err)
					return
				}
				futs = append(futs, f)
			}
			for i, f := range futs {
				if err := f.Get(ctx); err != nil {
					errs <- fmt.Errorf("future g%d-m%d: %w", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for g := range goroutines {
		for i := range perG {
			// At-least-once: a redelivery is allowed, a loss is not.
			if payload := fmt.Sprintf("g%d-m%d", g, i); rec.count(payload) == 0 {
				t.Fatalf("listener never saw %q although its future succeeded", payload)
			}
		}
	}
}

func testPerMessageFailures(t *testing.T, newPair Factory) {
	c, s := newPair(t)
	errListener := errors.New("listener could not store it")
	rec := newRecorder(func(m []byte) error {
		switch {
		case bytes.HasPrefix(m, []byte("bad")):
			return fmt.Errorf("undecodable %q: %w", m, queue.ErrInvalidMessage)
		case bytes.HasPrefix(m, []byte("fail")):
			return errListener
		}
		return nil
	})
	subscribe(t, s, TopicWrite, rec)
	ctx := waitCtx(t)
	// A remote publisher may retry an internal failure until the deadline;
	// keep it short so that such a retry ends quickly.
	p := c.NewBatchPublisher(2 * time.Second)
	defer func() { _ = p.Close() }()

	payloads := []string{"ok-0", "bad-1", "ok-2", "fail-3", "ok-4", "bad-5"}
	futs := make([]queue.Future, len(payloads))
	for i, pl := range payloads {
		futs[i] = publish(ctx, t, p, TopicWrite, pl)
	}
	for i, pl := range payloads {
		err := getTwice(ctx, t, pl, futs[i])
		switch {
		case strings.HasPrefix(pl, "ok"):
			if err != nil {
				t.Errorf("%s: got %v, want success: a neighbour's failure must not fail it", pl, err)
			}
		case strings.HasPrefix(pl, "bad"):
			if !errors.Is(err, queue.ErrInvalidMessage) {
				t.Errorf("%s: got %v, want ErrInvalidMessage", pl, err)
			}
		default:
			if err == nil || errors.Is(err, queue.ErrInvalidMessage) {
				t.Errorf("%s: got %v, want a failure other than ErrInvalidMessage", pl, err)
			}
		}
	}
}

func testUnknownTopic(t *testing.T, newPair Factory) {
	c, s := newPair(t)
	subscribe(t, s, TopicWrite, newRecorder(nil))
	ctx := waitCtx(t)
	p := c.NewBatchPublisher(5 * time.Second)
	defer func() { _ = p.Close() }()

	f, err := p.Publish(ctx, TopicUnsubscribed, msg("lost"))
	if err == nil {
		err = getTwice(ctx, t, "unsubscribed topic", f)
	}
	if !errors.Is(err, queue.ErrUnknownTopic) {
		t.Fatalf("publish to a topic nobody listens to: got %v, want ErrUnknownTopic", err)
	}
	// The other topic still works.
	if err := getTwice(ctx, t, "subscribed topic", publish(ctx, t, p, TopicWrite, "fine")); err != nil {
		t.Fatalf("publish to the subscribed topic: %v", err)
	}
}

func testDeadline(t *testing.T, newPair Factory) {
	c, s := newPair(t)
	release := make(chan struct{})
	subscribe(t, s, TopicWrite, queue.ListenerFunc(func(ctx context.Context, _ queue.Batch) queue.Result {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return queue.Result{}
	}))
	defer close(release)
	ctx := waitCtx(t)
	const timeout = 200 * time.Millisecond
	p := c.NewBatchPublisher(timeout)

	start := time.Now()
	f := publish(ctx, t, p, TopicWrite, "slow")
	err := getTwice(ctx, t, "slow listener", f)
	if !errors.Is(err, queue.ErrDeadline) {
		t.Fatalf("listener slower than the timeout: got %v, want ErrDeadline", err)
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("ErrDeadline after %v, before the %v timeout", d, timeout)
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("Close did not return although every message's deadline has passed")
	}
}

func testBroadcast(t *testing.T, newPair Factory) {
	c, s := newPair(t)
	subscribe(t, s, TopicQuery, queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
		res := queue.Result{Replies: make([][]byte, len(b.Messages))}
		for i, m := range b.Messages {
			res.Replies[i] = append([]byte("reply:"), m...)
		}
		return res
	}))
	ctx := waitCtx(t)

	replies, err := c.Broadcast(ctx, TopicQuery, Group, []byte("question"))
	if err != nil {
		t.Fatalf("Broadcast: %v", err)
	}
	if len(replies) == 0 {
		t.Fatal("Broadcast returned no reply")
	}
	for _, r := range replies {
		if r.Err != nil || string(r.Payload) != "reply:question" || r.Node == "" {
			t.Fatalf("reply = {Node: %q, Payload: %q, Err: %v}, want a named node answering %q",
				r.Node, r.Payload, r.Err, "reply:question")
		}
	}

	// An unsubscribed topic fails, either as the call's error or in every reply.
	replies, err = c.Broadcast(ctx, TopicUnsubscribed, Group, []byte("question"))
	if err == nil {
		if len(replies) == 0 {
			t.Fatal("Broadcast to an unsubscribed topic: no error and no reply")
		}
		for _, r := range replies {
			if !errors.Is(r.Err, queue.ErrUnknownTopic) {
				t.Fatalf("Broadcast to an unsubscribed topic: reply error %v, want ErrUnknownTopic", r.Err)
			}
		}
	} else if !errors.Is(err, queue.ErrUnknownTopic) {
		t.Fatalf("Broadcast to an unsubscribed topic: %v, want ErrUnknownTopic", err)
	}
}

func testCloseWaits(t *testing.T, newPair Factory) {
	c, s := newPair(t)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var released bool
	defer func() {
		if !released {
			close(release)
		}
	}()
	rec := newRecorder(nil)
	subscribe(t, s, TopicWrite, queue.ListenerFunc(func(ctx context.Context, b queue.Batch) queue.Result {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return rec.Handle(ctx, b)
	}))
	ctx := waitCtx(t)
	p := c.NewBatchPublisher(waitLimit)

	const n = 50
	futs := make([]queue.Future, n)
	for i := range futs {
		futs[i] = publish(ctx, t, p, TopicWrite, fmt.Sprintf("m%d", i))
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("listener never called")
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	// The listener is blocked, so no ack can exist yet: Close must still wait.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the listener still held the messages", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	released = true
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return after the listener did")
	}
	// Close has returned, so every outcome is known: Get must not wait.
	resolved, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for i, f := range futs {
		if err := f.Get(resolved); err != nil {
			t.Fatalf("future m%d after Close: %v, want success", i, err)
		}
		if rec.count(fmt.Sprintf("m%d", i)) == 0 {
			t.Fatalf("m%d acked but never seen by the listener", i)
		}
	}
}

func testPublishAfterClose(t *testing.T, newPair Factory) {
	c, s := newPair(t)
	subscribe(t, s, TopicWrite, newRecorder(nil))
	ctx := waitCtx(t)
	p := c.NewBatchPublisher(5 * time.Second)
	if err := getTwice(ctx, t, "before Close", publish(ctx, t, p, TopicWrite, "first")); err != nil {
		t.Fatalf("publish before Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := p.Publish(ctx, TopicWrite, msg("late")); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Publish after Close: %v, want ErrClosed", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// testPayloadReusableAfterAck: once a future succeeded the publisher may
// reuse the payload's memory (see queue.Future). Every payload is
// overwritten as soon as its ack is in; the listener must have seen each
// one as published, and nothing overwritten.
func testPayloadReusableAfterAck(t *testing.T, newPair Factory) {
	p, rec, ctx := recordedWrites(t, newPair)

	const n, window = 2000, 64
	bufs := make([][]byte, n)
	futs := make([]queue.Future, n)
	reuse := func(i int) {
		if err := futs[i].Get(ctx); err != nil {
			t.Fatalf("future %d: %v", i, err)
		}
		for j := range bufs[i] {
			bufs[i][j] = 'X' // what a publisher reusing the buffer would write
		}
	}
	for i := range n {
		bufs[i] = fmt.Appendf(nil, "reuse-%d", i)
		f, err := p.Publish(ctx, TopicWrite, queue.Message{Group: Group, Payload: bufs[i]})
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		futs[i] = f
		if i >= window {
			reuse(i - window) // acks arrive while later messages are in flight
		}
	}
	for i := n - window; i < n; i++ {
		reuse(i)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i := range n {
		if payload := fmt.Sprintf("reuse-%d", i); rec.count(payload) == 0 {
			t.Fatalf("listener never saw %q as published", payload)
		}
	}
	if k := rec.countPrefix("X"); k > 0 {
		t.Fatalf("listener saw %d overwritten payloads: the queue read a payload after its ack", k)
	}
}
