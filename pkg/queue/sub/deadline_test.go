package sub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
)

// deadlineRecorder is a listener that records the deadline of its ctx.
type deadlineRecorder struct {
	mu       sync.Mutex
	deadline time.Time
	set      bool
}

func (d *deadlineRecorder) Handle(ctx context.Context, b queue.Batch) queue.Result {
	d.mu.Lock()
	d.deadline, d.set = ctx.Deadline()
	d.mu.Unlock()
	if ctx.Err() != nil {
		errs := make([]error, len(b.Messages))
		for i := range errs {
			errs[i] = ctx.Err()
		}
		return queue.Result{Errs: errs}
	}
	return queue.Result{}
}

func (d *deadlineRecorder) got() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deadline, d.set
}

// A batch's deadline is the time it has left, counted from when the
// subscriber received it on the subscriber's own clock: a publisher whose
// clock is an hour off either way (its deadline_unix_nano an hour past,
// or an hour ahead) neither has its batch refused as late nor gives the
// listener an hour too long.
func TestBatchDeadlineIgnoresThePublishersClock(t *testing.T) {
	const timeout = 30 * time.Second
	for _, skew := range []time.Duration{-time.Hour, time.Hour} {
		t.Run("publisher clock "+skew.String(), func(t *testing.T) {
			rec := &deadlineRecorder{}
			ts := startServer(t, sub.Config{}, map[queue.Topic]queue.Listener{topic: rec})
			r := openStream(t, dial(t, ts.addr, nil))
			r.handshake()
			before := time.Now()
			r.send(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Batch{Batch: &clusterv1.Batch{
				BatchId: 1, Topic: string(topic), Messages: [][]byte{[]byte("m")},
				DeadlineUnixNano: time.Now().Add(skew).Add(timeout).UnixNano(),
				TimeoutNanos:     int64(timeout),
			}}})
			a := r.ack()
			after := time.Now()
			if a.GetBatchFailure() != nil || len(a.GetFailures()) != 0 {
				t.Fatalf("ack %v, want success: the batch had %v left", a, timeout)
			}
			d, ok := rec.got()
			if !ok || d.Before(before.Add(timeout)) || d.After(after.Add(timeout)) {
				t.Fatalf("listener deadline %v (set %v), want within [%v, %v]: %v from receipt",
					d, ok, before.Add(timeout), after.Add(timeout), timeout)
			}
		})
	}
}

// A batch sent with no time left (timeout_nanos 1) is answered with
// CODE_DEADLINE_EXCEEDED, for the batch or for each of its messages,
// whatever the publisher's clock says in deadline_unix_nano.
func TestBatchWithNoTimeLeftFails(t *testing.T) {
	rec := &deadlineRecorder{}
	ts := startServer(t, sub.Config{}, map[queue.Topic]queue.Listener{topic: rec})
	r := openStream(t, dial(t, ts.addr, nil))
	r.handshake()
	r.send(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Batch{Batch: &clusterv1.Batch{
		BatchId: 1, Topic: string(topic), Messages: [][]byte{[]byte("m")},
		DeadlineUnixNano: time.Now().Add(time.Hour).UnixNano(),
		TimeoutNanos:     1,
	}}})
	a := r.ack()
	code := a.GetBatchFailure().GetCode()
	if len(a.GetFailures()) == 1 {
		code = a.GetFailures()[0].GetFailure().GetCode()
	}
	if code != clusterv1.Code_CODE_DEADLINE_EXCEEDED {
		t.Fatalf("ack %v, want CODE_DEADLINE_EXCEEDED", a)
	}
}
