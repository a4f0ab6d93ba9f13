package poll

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// Until returns once the condition holds, having checked it until then.
func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	Until(t, "the third check", func() bool { return calls.Add(1) >= 3 })
	if got := calls.Load(); got != 3 {
		t.Fatalf("checked %d times, want 3", got)
	}
}

// A condition that never holds fails the test, naming what it waited for.
func TestWithinFailsWhenTheConditionNeverHolds(t *testing.T) {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine, as it ends a test
		defer close(done)
		Within(rec, 20*time.Millisecond, "nothing", func() bool { return false })
	}()
	<-done
	if rec.msg != "timed out after 20ms waiting for nothing" {
		t.Fatalf("failure %q", rec.msg)
	}
}

// recorder takes a Fatalf instead of failing the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
