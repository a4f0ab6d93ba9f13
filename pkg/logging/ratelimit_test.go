package logging

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder keeps what reaches it as "LEVEL message k=v ..." lines.
type recorder struct {
	mu    sync.Mutex
	lines *[]string
	attrs string
}

func newRecorder() *recorder { return &recorder{lines: new([]string)} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%s", rec.Level, rec.Message, r.attrs)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	*r.lines = append(*r.lines, b.String())
	r.mu.Unlock()
	return nil
}

func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	s := r.attrs
	for _, a := range attrs {
		s += fmt.Sprintf(" %s=%v", a.Key, a.Value)
	}
	return &recorder{lines: r.lines, attrs: s}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := *r.lines
	*r.lines = nil
	return out
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }

func TestRateLimitedSuppressesAFloodAndSummarizesIt(t *testing.T) {
	rec := newRecorder()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	log := slog.New(NewRateLimited(rec, RateLimitConfig{Burst: 2, Interval: time.Minute, MinLevel: slog.LevelWarn, Now: clock.Now}))

	session := log.With("group", "g1")
	for i := range 5 {
		session.Warn("write failed", "message_id", i)
	}
	log.Warn("other failure")         // its own budget
	log.Info("write failed")          // below MinLevel: never limited
	log.Debug("write rejected")       // below MinLevel
	log.Error("write failed", "x", 1) // another level, another key
	want := []string{
		"WARN write failed group=g1 message_id=0",
		"WARN write failed group=g1 message_id=1",
		"WARN other failure",
		"INFO write failed",
		"DEBUG write rejected",
		"ERROR write failed x=1",
	}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("first window:\n got %q\nwant %q", got, want)
	}

	clock.advance(30 * time.Second)
	log.With("group", "g2").Warn("write failed") // same key whatever the attributes
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("still in the window, got %q", got)
	}

	clock.advance(31 * time.Second)
	log.Warn("write failed", "message_id", 9)
	want = []string{
		"WARN suppressed similar log messages message=write failed suppressed=4 interval=1m0s",
		"WARN write failed message_id=9",
	}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("next window:\n got %q\nwant %q", got, want)
	}
}

// A key that stops being logged still gets its summary, with the next
// limited record of any key after its window.
func TestRateLimitedSummarizesIdleKeys(t *testing.T) {
	rec := newRecorder()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	log := slog.New(NewRateLimited(rec, RateLimitConfig{Burst: 1, Interval: time.Second, MinLevel: slog.LevelWarn, Now: clock.Now}))
	for range 3 {
		log.Warn("publish failed")
	}
	clock.advance(2 * time.Second)
	log.Error("unrelated")
	want := []string{
		"WARN publish failed",
		"WARN suppressed similar log messages message=publish failed suppressed=2 interval=1s",
		"ERROR unrelated",
	}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
	clock.advance(2 * time.Second)
	log.Warn("publish failed")
	if got := rec.take(); !slices.Equal(got, []string{"WARN publish failed"}) {
		t.Fatalf("after the summary: %q", got)
	}
}

func TestRateLimitedOff(t *testing.T) {
	rec := newRecorder()
	if h := NewRateLimited(rec, RateLimitConfig{Burst: 0, Interval: time.Second}); h != slog.Handler(rec) {
		t.Fatalf("Burst 0: got %T, want the handler itself", h)
	}
}
