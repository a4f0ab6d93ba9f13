package run

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext returns a copy of parent that is cancelled when the process
// receives SIGINT or SIGTERM; context.Cause tells which signal it was. After
// the first signal the handler is removed, so a second one kills the process
// with the default action: an operator can always force a stuck shutdown.
// Call the returned cancel function to release the handler when done.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer signal.Stop(sigs)
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("received signal %v", sig))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(context.Canceled)
		<-done
	}
}
