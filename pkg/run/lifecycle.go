package run

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// entry is a started component and, for a Service, its Serve goroutine.
type entry struct {
	c    Component
	name string

	cancelServe context.CancelFunc // nil unless c is a Service
	served      chan struct{}      // closed when Serve has returned
	serveErr    error              // written before served is closed
	early       bool               // Serve returned before being stopped; as serveErr
	stopping    atomic.Bool        // set before the group stops the component
}

// start starts components in order until one fails or ctx is done, and
// returns those started.
func (g *Group) start(ctx context.Context, st *runState) ([]*entry, error) {
	var started []*entry
	for _, c := range g.components {
		// Told to stop (or a Service failed) meanwhile: start nothing more.
		// Not an error of start's; Run reports why it stopped.
		select {
		case <-ctx.Done():
			return started, nil
		default:
		}
		e := &entry{c: c, name: c.Name()}
		if s, ok := c.(Starter); ok {
			begin := time.Now()
			g.logger.Debug("starting component", "component", e.name)
			if err := s.Start(ctx); err != nil {
				return started, fmt.Errorf("run: start %q: %w", e.name, err)
			}
			g.logger.Info("started component", "component", e.name, "took", time.Since(begin))
		}
		if svc, ok := c.(Service); ok {
			g.serve(ctx, st, e, svc)
		}
		started = append(started, e)
	}
	return started, nil
}

func (g *Group) serve(ctx context.Context, st *runState, e *entry, svc Service) {
	// Serve's context is detached from the run's cancellation (keeping its
	// values): when the run ends, the group cancels each Serve itself, in
	// reverse order, rather than all at once.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancelServe = cancel
	e.served = make(chan struct{})
	go func() {
		defer close(e.served)
		err := svc.Serve(sctx)
		e.serveErr = err
		if e.stopping.Load() {
			return
		}
		e.early = true
		if err == nil {
			err = ErrUnexpectedExit
		}
		g.logger.Error("service exited", "component", e.name, "err", err)
		st.fail(fmt.Errorf("run: serve %q: %w", e.name, err))
	}()
}

// stop stops started components in reverse order within one budget.
func (g *Group) stop(parent context.Context, started []*entry, timeout time.Duration) error {
	if len(started) == 0 {
		return nil
	}
	// Stopping must go on after the run's context was cancelled: that is
	// usually why we are stopping.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), timeout)
	defer cancel()
	begin := time.Now()
	var errs []error
	var late []string
	for i := len(started) - 1; i >= 0; i-- {
		e := started[i]
		err := g.stopOne(ctx, e)
		if errors.Is(err, ErrStopTimeout) {
			late = append(late, e.name)
		}
		errs = append(errs, err)
	}
	if len(late) > 0 {
		g.logger.Error("components did not stop in time and were abandoned",
			"count", len(late), "components", late, "stop_timeout", timeout)
	} else {
		g.logger.Info("stopped", "took", time.Since(begin))
	}
	return errors.Join(errs...)
}

// stopOne runs the two phases of a stop: the graceful Stop, then cancelling
// Serve and waiting for it to return. Both run on a helper goroutine so
// that a component ignoring ctx costs the group its deadline, not a hang.
func (g *Group) stopOne(ctx context.Context, e *entry) error {
	stopper, isStopper := e.c.(Stopper)
	if !isStopper && e.cancelServe == nil {
		return nil
	}
	e.stopping.Store(true)
	begin := time.Now()
	// Buffered: an abandoned helper must still be able to finish and exit.
	done := make(chan error, 1)
	go func() {
		var err error
		if isStopper {
			err = stopper.Stop(ctx)
		}
		if e.cancelServe != nil {
			e.cancelServe()
			<-e.served
			// An early exit was already reported as the run's failure; an
			// error after being stopped is news.
			if !e.early && e.serveErr != nil && !errors.Is(e.serveErr, context.Canceled) {
				err = errors.Join(err, fmt.Errorf("serve: %w", e.serveErr))
			}
		}
		done <- err
	}()

	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if e.cancelServe != nil {
			e.cancelServe() // the hard phase: stop draining now
		}
		select {
		case err = <-done: // finished just as the budget ran out
		default:
			g.logger.Error("component did not stop in time", "component", e.name, "waited", time.Since(begin))
			return fmt.Errorf("run: stop %q: %w", e.name, ErrStopTimeout)
		}
	}
	switch {
	case err == nil:
		g.logger.Info("stopped component", "component", e.name, "took", time.Since(begin))
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		g.logger.Error("component did not stop in time", "component", e.name, "err", err)
		return fmt.Errorf("run: stop %q: %w: %w", e.name, ErrStopTimeout, err)
	default:
		g.logger.Error("component failed to stop", "component", e.name, "err", err)
		return fmt.Errorf("run: stop %q: %w", e.name, err)
	}
}
