package liaison

import (
	"sync/atomic"
	"time"
)

// revisionClock hands out the versions this liaison stamps on stream
// elements and the revisions it stamps on properties: Unix nanoseconds,
// strictly increasing on this liaison even when the clock steps back, so
// of two writes of one key through one liaison the later one has the
// higher version, which data nodes keep.
type revisionClock struct {
	now  func() time.Time
	last atomic.Int64
}

// next returns a revision above both the clock's last and floor.
func (c *revisionClock) next(floor int64) int64 {
	for {
		last := c.last.Load()
		n := max(c.now().UnixNano(), last+1, floor+1)
		if c.last.CompareAndSwap(last, n) {
			return n
		}
	}
}
