package pub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
)

// A batch goes out with the time its messages have left (timeout_nanos),
// measured on the publisher's clock alone, which the subscriber counts
// from when it receives the batch (sub's TestBatchDeadlineIgnoresThePublishersClock);
// deadline_unix_nano still rides along for subscribers that predate it.
func TestBatchCarriesTheTimeLeft(t *testing.T) {
	const timeout = time.Minute
	var (
		mu     sync.Mutex
		frames []*clusterv1.Batch
	)
	s := &scripted{onBatch: func(_ int64, b *clusterv1.Batch) *clusterv1.Ack {
		mu.Lock()
		frames = append(frames, &clusterv1.Batch{TimeoutNanos: b.GetTimeoutNanos(), DeadlineUnixNano: b.GetDeadlineUnixNano()})
		mu.Unlock()
		return &clusterv1.Ack{}
	}}
	cfg := fastConfig()
	c := newClient(t, cfg, startScripted(t, s))
	p := c.NewBatchPublisher(timeout)
	before := time.Now()
	f, err := p.Publish(context.Background(), topic, queue.Message{Group: group, Payload: []byte("m")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitMax)
	defer cancel()
	if err := f.Get(ctx); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if len(frames) != 1 {
		t.Fatalf("%d batches for one message", len(frames))
	}
	// The deadline is stamped up to a tick late (Client.now), and the
	// batch sent some time after Publish; never more than waitMax on a
	// machine that works.
	left := time.Duration(frames[0].GetTimeoutNanos())
	if left <= timeout-waitMax || left > timeout+2*cfg.TickInterval {
		t.Errorf("timeout_nanos %v, want about the %v the message had left", left, timeout)
	}
	if d := time.Unix(0, frames[0].GetDeadlineUnixNano()); d.Before(before.Add(timeout)) || d.After(after.Add(timeout+2*cfg.TickInterval)) {
		t.Errorf("deadline_unix_nano %v, want %v after the publish", d, timeout)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
