package liaison

import (
	"sync"
	"testing"
	"time"
)

// Revisions strictly increase on one liaison even when its clock stands
// still or steps back, and stay above the record read (floor), so a
// later Apply wins over anything it read.
func TestRevisionClock(t *testing.T) {
	now := time.Unix(0, 1000)
	c := revisionClock{now: func() time.Time { return now }}
	steps := []struct {
		clock, floor, want int64
	}{
		{clock: 1000, want: 1000},
		{clock: 1000, want: 1001},              // the clock stood still
		{clock: 500, want: 1002},               // it stepped back
		{clock: 2000, floor: 5000, want: 5001}, // another liaison's clock runs ahead
		{clock: 6000, floor: 10, want: 6000},
	}
	for i, st := range steps {
		now = time.Unix(0, st.clock)
		if got := c.next(st.floor); got != st.want {
			t.Fatalf("step %d: next(%d) at %d = %d, want %d", i, st.floor, st.clock, got, st.want)
		}
	}

	// Concurrent callers never share a revision.
	c = revisionClock{now: func() time.Time { return time.Unix(0, 42) }}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				r := c.next(0)
				mu.Lock()
				if seen[r] {
					t.Errorf("revision %d handed out twice", r)
				}
				seen[r] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
