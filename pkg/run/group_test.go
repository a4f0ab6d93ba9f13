package run

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// harness gives a test case's components a way to say "everything is up".
type harness struct {
	rec       *recorder
	ready     chan struct{}
	readyOnce sync.Once
}

func (h *harness) markReady() { h.readyOnce.Do(func() { close(h.ready) }) }

// readyStart is a Start func that marks the group as fully started.
func (h *harness) readyStart(context.Context) error {
	h.markReady()
	return nil
}

func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		build       func(h *harness) []Component
		stopTimeout time.Duration
		// cancelWhenReady cancels Run's ctx once a component marks ready;
		// cases without it must end by themselves.
		cancelWhenReady bool
		cancelBefore    bool
		wantEvents      []string
		wantErr         []error
		wantText        []string
		notText         []string
	}{
		{
			name: "starts in order and stops in reverse",
			build: func(h *harness) []Component {
				return []Component{
					&res{name: "a", rec: h.rec},
					&svc{res: res{name: "b", rec: h.rec}},
					plain("config"),
					&loop{name: "c", rec: h.rec},
					&svc{res: res{name: "d", rec: h.rec, start: h.readyStart}},
				}
			},
			cancelWhenReady: true,
			wantEvents: []string{
				"start a", "start b", "start d",
				"stop d", "exit d", "exit c", "stop b", "exit b", "stop a",
			},
		},
		{
			name: "failing start stops the components started before it",
			build: func(h *harness) []Component {
				return []Component{
					&res{name: "a", rec: h.rec},
					&svc{res: res{name: "b", rec: h.rec}},
					&res{name: "c", rec: h.rec, start: func(context.Context) error { return errBoom }},
					&res{name: "d", rec: h.rec},
				}
			},
			wantEvents: []string{"start a", "start b", "start c", "stop b", "exit b", "stop a"},
			wantErr:    []error{errBoom},
			wantText:   []string{`start "c"`},
		},
		{
			name: "serve error stops the group and is returned",
			build: func(h *harness) []Component {
				return []Component{
					&res{name: "a", rec: h.rec},
					&svc{res: res{name: "b", rec: h.rec}, serve: func(context.Context) error {
						<-h.ready
						return errBoom
					}},
					&svc{res: res{name: "c", rec: h.rec, start: h.readyStart}},
				}
			},
			wantEvents: []string{
				"start a", "start b", "start c", "exit b",
				"stop c", "exit c", "stop b", "stop a",
			},
			wantErr:  []error{errBoom},
			wantText: []string{`serve "b"`},
		},
		{
			name: "serve returning nil while running is a failure",
			build: func(h *harness) []Component {
				return []Component{
					&svc{res: res{name: "a", rec: h.rec}, serve: func(context.Context) error {
						<-h.ready
						return nil
					}},
					&res{name: "b", rec: h.rec, start: h.readyStart},
				}
			},
			wantEvents: []string{"start a", "start b", "exit a", "stop b", "stop a"},
			wantErr:    []error{ErrUnexpectedExit},
			wantText:   []string{`serve "a"`},
		},
		{
			name: "start interrupted by a failing service reports only the failure",
			build: func(h *harness) []Component {
				bStarting := make(chan struct{})
				return []Component{
					&svc{res: res{name: "a", rec: h.rec}, serve: func(context.Context) error {
						<-bStarting
						return errBoom
					}},
					&res{name: "b", rec: h.rec, start: func(ctx context.Context) error {
						close(bStarting)
						<-ctx.Done()
						return ctx.Err()
					}},
				}
			},
			wantEvents: []string{"start a", "start b", "exit a", "stop a"},
			wantErr:    []error{errBoom},
			notText:    []string{`"b"`},
		},
		{
			name: "stop error is returned and the others still stop",
			build: func(h *harness) []Component {
				return []Component{
					&res{name: "a", rec: h.rec},
					&svc{res: res{name: "b", rec: h.rec, stop: func(context.Context) error { return errBoom }}},
					&svc{res: res{name: "c", rec: h.rec, start: h.readyStart}},
				}
			},
			cancelWhenReady: true,
			wantEvents: []string{
				"start a", "start b", "start c",
				"stop c", "exit c", "stop b", "exit b", "stop a",
			},
			wantErr:  []error{errBoom},
			wantText: []string{`stop "b"`},
		},
		{
			name: "serve error after being stopped is returned",
			build: func(h *harness) []Component {
				return []Component{
					&svc{res: res{name: "a", rec: h.rec, start: h.readyStart}, serve: func(ctx context.Context) error {
						<-ctx.Done()
						return errBoom
					}},
				}
			},
			cancelWhenReady: true,
			wantEvents:      []string{"start a", "stop a", "exit a"},
			wantErr:         []error{errBoom},
			wantText:        []string{`stop "a": serve: boom`},
		},
		{
			name: "stop that honours its deadline is counted as late",
			build: func(h *harness) []Component {
				return []Component{
					&res{name: "a", rec: h.rec, stop: func(ctx context.Context) error {
						<-ctx.Done()
						return ctx.Err()
					}},
					&res{name: "b", rec: h.rec, start: h.readyStart},
				}
			},
			stopTimeout:     50 * time.Millisecond,
			cancelWhenReady: true,
			wantEvents:      []string{"start a", "start b", "stop b", "stop a"},
			// Stop's own DeadlineExceeded may or may not arrive before the
			// group gives up on it; either way it is late.
			wantErr:  []error{ErrStopTimeout},
			wantText: []string{`stop "a"`},
			notText:  []string{`"b"`},
		},
		{
			name: "context cancelled before Run starts nothing",
			build: func(h *harness) []Component {
				return []Component{&res{name: "a", rec: h.rec}}
			},
			cancelBefore: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &harness{rec: &recorder{}, ready: make(chan struct{})}
			g := NewGroup(Config{Name: "test", StopTimeout: tt.stopTimeout},
				slog.New(slog.DiscardHandler), tt.build(h)...)
			if err := g.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelBefore {
				cancel()
			}
			if tt.cancelWhenReady {
				go func() {
					select {
					case <-h.ready:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			err := runWithin(t, ctx, g)
			checkErr(t, err, tt.wantErr, tt.wantText, tt.notText)
			if got := h.rec.get(); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events:\n got %q\nwant %q", got, tt.wantEvents)
			}
		})
	}
}

func TestRunAbandonsComponentThatIgnoresStopDeadline(t *testing.T) {
	rec := &recorder{}
	release := make(chan struct{})
	// The hung Stop returns when the test ends, so no goroutine outlives it.
	t.Cleanup(func() { close(release) })
	ready := make(chan struct{})
	logs := &syncBuffer{}
	const timeout = 100 * time.Millisecond
	g := NewGroup(Config{Name: "test", StopTimeout: timeout},
		slog.New(slog.NewTextHandler(logs, nil)),
		&svc{res: res{name: "stuck", rec: rec, stop: func(context.Context) error {
			<-release
			return nil
		}}},
		&svc{res: res{name: "b", rec: rec}},
		&res{name: "c", rec: rec, start: func(context.Context) error {
			close(ready)
			return nil
		}},
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-ready
		cancel()
	}()
	begin := time.Now()
	err := runWithin(t, ctx, g)
	if took := time.Since(begin); took < timeout {
		t.Errorf("Run returned after %s, before the %s stop budget was spent", took, timeout)
	}
	checkErr(t, err, []error{ErrStopTimeout}, []string{`stop "stuck"`}, []string{`"b"`, `"c"`})
	want := []string{"start stuck", "start b", "start c", "stop c", "stop b", "exit b", "stop stuck"}
	if got := rec.get(); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("events:\n got %q\nwant %q first", got, want)
	}
	// Run does not wait for it, but the stuck component's Serve is cancelled
	// when the budget runs out, even though its Stop is still hung.
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(rec.get(), "exit stuck") {
		if time.Now().After(deadline) {
			t.Fatal("Serve of the abandoned component was never cancelled")
		}
		time.Sleep(time.Millisecond)
	}
	out := logs.String()
	for _, s := range []string{"component did not stop in time", "count=1", "components=[stuck]"} {
		if !strings.Contains(out, s) {
			t.Errorf("logs do not mention %q:\n%s", s, out)
		}
	}
}

func TestRunOnlyOnce(t *testing.T) {
	g := NewGroup(Config{Name: "test"}, slog.New(slog.DiscardHandler), plain("a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	if err := g.Run(ctx); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("second Run = %v, want a 'more than once' error", err)
	}
}

func TestRunRejectsBadComponentList(t *testing.T) {
	g := NewGroup(Config{Name: "test"}, slog.New(slog.DiscardHandler), plain("a"), plain("a"))
	err := g.Run(context.Background())
	checkErr(t, err, nil, []string{`both named "a"`}, nil)
}

func TestValidate(t *testing.T) {
	errPort := errors.New("port out of range")
	errDir := errors.New("data dir missing")
	failing := func(name string, err error) Component {
		return &res{name: name, validate: func() error { return err }}
	}
	tests := []struct {
		name     string
		cfg      Config
		comps    []Component
		wantErr  []error
		wantText []string
	}{
		{
			name:  "valid",
			comps: []Component{plain("a"), &res{name: "b"}},
		},
		{
			name:     "every failure is reported with its component",
			comps:    []Component{failing("grpc", errPort), plain("ok"), failing("store", errDir)},
			wantErr:  []error{errPort, errDir},
			wantText: []string{`component "grpc"`, `component "store"`},
		},
		{
			name:     "duplicate names",
			comps:    []Component{plain("a"), plain("b"), plain("a")},
			wantText: []string{`components 0 and 2 are both named "a"`},
		},
		{
			name:     "nil and unnamed components",
			comps:    []Component{nil, plain("")},
			wantText: []string{"component 0 is nil", "component 1 has no name"},
		},
		{
			name:     "negative stop timeout",
			cfg:      Config{StopTimeout: -time.Second},
			wantText: []string{"stop timeout must be positive"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGroup(tt.cfg, slog.New(slog.DiscardHandler), tt.comps...)
			checkErr(t, g.Validate(), tt.wantErr, tt.wantText, nil)
		})
	}
}

func TestRegisterFlags(t *testing.T) {
	var port int
	c := &res{name: "grpc", flags: func(fs *pflag.FlagSet) {
		fs.IntVar(&port, "grpc-port", 17912, "port")
	}}
	g := NewGroup(Config{Name: "test"}, slog.New(slog.DiscardHandler), c, plain("other"))
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	g.RegisterFlags(fs)
	if f := fs.Lookup("stop-timeout"); f == nil || f.DefValue != DefaultStopTimeout.String() {
		t.Fatalf("stop-timeout flag = %+v, want default %s", f, DefaultStopTimeout)
	}
	if err := fs.Parse([]string{"--grpc-port=5", "--stop-timeout=3s"}); err != nil {
		t.Fatal(err)
	}
	if port != 5 {
		t.Errorf("grpc-port = %d, want 5", port)
	}
	if g.cfg.StopTimeout != 3*time.Second {
		t.Errorf("stop timeout = %s, want 3s", g.cfg.StopTimeout)
	}
	if err := g.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
