package liaison

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestTimestampValidAgreesWithCheckTimestamp: the fast path's predicate
// must accept exactly the timestamps checkTimestamp accepts, at every edge
// (CheckValid's range, int64 nanoseconds, millisecond precision) and on
// random ones.
func TestTimestampValidAgreesWithCheckTimestamp(t *testing.T) {
	secs := []int64{math.MinInt64, -62135596801, -62135596800, -1, 0, 1, 253402300799, 253402300800, math.MaxInt64}
	for _, edge := range []time.Time{minTime, maxTime} {
		secs = append(secs, edge.Unix()-1, edge.Unix(), edge.Unix()+1)
	}
	nanos := []int32{math.MinInt32, -1, 0, 1, 999_999, 1_000_000, 999_000_000, 999_999_999, 1_000_000_000, math.MaxInt32,
		int32(minTime.Nanosecond()), int32(minTime.Nanosecond()) - 1_000_000, int32(maxTime.Nanosecond()), int32(maxTime.Nanosecond()) + 1_000_000}
	check := func(s int64, n int32) {
		t.Helper()
		want := checkTimestamp(&timestamppb.Timestamp{Seconds: s, Nanos: n}) == nil
		if got := timestampValid(s, n); got != want {
			t.Errorf("timestampValid(%d, %d) = %v, checkTimestamp says %v", s, n, got, want)
		}
	}
	accepted := 0
	for _, s := range secs {
		for _, n := range nanos {
			check(s, n)
			if timestampValid(s, n) {
				accepted++
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no edge case accepted: the table tests nothing valid")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		s := r.Int64N(2*maxTime.Unix()) - maxTime.Unix()
		n := int32(r.IntN(1000)) * int32(time.Millisecond)
		if r.IntN(4) == 0 {
			n += int32(r.IntN(1000)) // off millisecond precision
		}
		check(s, n)
	}
}
