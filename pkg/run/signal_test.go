package run

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Sending SIGTERM to the test process is safe here: SignalContext has
// installed its handler before the signal is sent, and only one is sent.
func TestRunStopsOnSIGTERM(t *testing.T) {
	rec := &recorder{}
	ready := make(chan struct{})
	ctx, stop := SignalContext(context.Background())
	defer stop()
	g := NewGroup(Config{Name: "test"}, slog.New(slog.DiscardHandler),
		&svc{res: res{name: "a", rec: rec}},
		&res{name: "b", rec: rec, start: func(context.Context) error {
			close(ready)
			return nil
		}},
	)
	go func() {
		<-ready
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			t.Errorf("kill: %v", err)
		}
	}()
	if err := runWithin(t, ctx, g); err != nil {
		t.Fatalf("Run after SIGTERM = %v, want nil", err)
	}
	want := []string{"start a", "start b", "stop b", "stop a", "exit a"}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	if cause := context.Cause(ctx); cause == nil || !strings.Contains(cause.Error(), "terminated") {
		t.Errorf("cause = %v, want it to name the signal", cause)
	}
}

func TestSignalContextCancel(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	stop()
	if ctx.Err() == nil {
		t.Fatal("context not cancelled by its cancel function")
	}
	stop() // idempotent
}
