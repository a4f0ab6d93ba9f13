package run

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

var errBoom = errors.New("boom")

// recorder keeps the lifecycle events of a test's components in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(ev string) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// res is a resource-like component: Start and Stop, no Serve loop. Nil
// func fields succeed at once.
type res struct {
	name     string
	rec      *recorder
	start    func(ctx context.Context) error
	stop     func(ctx context.Context) error
	validate func() error
	flags    func(fs *pflag.FlagSet)
}

func (r *res) Name() string { return r.name }

func (r *res) Start(ctx context.Context) error {
	r.rec.add("start " + r.name)
	if r.start != nil {
		return r.start(ctx)
	}
	return nil
}

func (r *res) Stop(ctx context.Context) error {
	r.rec.add("stop " + r.name)
	if r.stop != nil {
		return r.stop(ctx)
	}
	return nil
}

func (r *res) Validate() error {
	if r.validate != nil {
		return r.validate()
	}
	return nil
}

func (r *res) RegisterFlags(fs *pflag.FlagSet) {
	if r.flags != nil {
		r.flags(fs)
	}
}

// svc is a res with a Serve loop; a nil serve waits for ctx like a server.
type svc struct {
	res
	serve func(ctx context.Context) error
}

func (s *svc) Serve(ctx context.Context) error {
	var err error
	if s.serve != nil {
		err = s.serve(ctx)
	} else {
		<-ctx.Done()
		err = ctx.Err()
	}
	s.rec.add("exit " + s.name)
	return err
}

// loop is a Service with nothing else: it is stopped by cancelling ctx.
type loop struct {
	name string
	rec  *recorder
}

func (l *loop) Name() string { return l.name }

func (l *loop) Serve(ctx context.Context) error {
	<-ctx.Done()
	l.rec.add("exit " + l.name)
	return nil
}

// plain has a name and nothing to start or stop.
type plain string

func (p plain) Name() string { return string(p) }

// syncBuffer is a log sink safe for the group's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runWithin runs g and fails the test if Run does not return in time: the
// point of the group's deadlines is that Run always returns.
func runWithin(t *testing.T, ctx context.Context, g *Group) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

func checkErr(t *testing.T, err error, want []error, wantText, notText []string) {
	t.Helper()
	if len(want) == 0 && len(wantText) == 0 && err != nil {
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
	for _, s := range notText {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("error %v: want it not to mention %q", err, s)
		}
	}
}
