package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
)

// DefaultStopTimeout is the shutdown budget of a Group whose Config leaves
// StopTimeout at zero.
const DefaultStopTimeout = 10 * time.Second

// Errors callers can branch on; test for them with errors.Is.
var (
	// ErrStopTimeout marks a component that had not stopped when the
	// group's stop budget ran out. The group abandoned it and moved on.
	ErrStopTimeout = errors.New("run: component did not stop in time")
	// ErrUnexpectedExit marks a Service whose Serve returned nil while the
	// group was still running: a server loop that ends by itself is a bug
	// or a lost dependency, and the process must not go on half-alive.
	ErrUnexpectedExit = errors.New("run: service returned while the group was running")
)

// Config configures a Group.
type Config struct {
	// Name identifies the group (usually the role) in logs and errors.
	Name string
	// StopTimeout is the budget for stopping all components, shared in
	// reverse start order: each gets what the ones before it left.
	// Zero means DefaultStopTimeout.
	StopTimeout time.Duration
}

// RegisterFlags binds the config's fields to flags in fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&c.StopTimeout, "stop-timeout", c.StopTimeout,
		"how long to wait for all components to stop gracefully before giving up on them")
}

// Validate reports a config the group cannot run with.
func (c *Config) Validate() error {
	if c.StopTimeout <= 0 {
		return fmt.Errorf("run: group %q: stop timeout must be positive, got %s", c.Name, c.StopTimeout)
	}
	return nil
}

// Group runs components in dependency order and stops them in reverse.
// The usual sequence is NewGroup, RegisterFlags, parse flags, Validate, Run.
// A Group runs once.
type Group struct {
	cfg        Config
	logger     *slog.Logger
	components []Component
	ran        atomic.Bool
}

// NewGroup returns a Group of components, listed so that each comes after
// the components it depends on. A nil logger means slog.Default().
func NewGroup(cfg Config, logger *slog.Logger, components ...Component) *Group {
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Group{
		cfg:        cfg,
		logger:     logger.With("group", cfg.Name),
		components: append([]Component(nil), components...),
	}
}

// RegisterFlags registers the group's own flags (--stop-timeout) and those
// of every component that is a FlagRegisterer.
func (g *Group) RegisterFlags(fs *pflag.FlagSet) {
	g.cfg.RegisterFlags(fs)
	for _, c := range g.components {
		if f, ok := c.(FlagRegisterer); ok {
			f.RegisterFlags(fs)
		}
	}
}

// Validate checks the group's config and component list and calls every
// Validator, returning all problems at once, each naming its component, so
// an operator can fix a command line in one go.
func (g *Group) Validate() error {
	errs := []error{g.cfg.Validate(), g.checkComponents()}
	for _, c := range g.components {
		if v, ok := c.(Validator); ok {
			if err := v.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("run: component %q: %w", c.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

func (g *Group) checkComponents() error {
	var errs []error
	seen := make(map[string]int, len(g.components))
	for i, c := range g.components {
		if c == nil {
			errs = append(errs, fmt.Errorf("run: group %q: component %d is nil", g.cfg.Name, i))
			continue
		}
		name := c.Name()
		if name == "" {
			errs = append(errs, fmt.Errorf("run: group %q: component %d has no name", g.cfg.Name, i))
			continue
		}
		if j, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("run: group %q: components %d and %d are both named %q", g.cfg.Name, j, i, name))
		}
		seen[name] = i
	}
	return errors.Join(errs...)
}

// Run starts the components in order and keeps them running until ctx is
// done (use SignalContext to stop on SIGINT/SIGTERM) or a Service fails.
// Each Starter's Start must return before the next component starts; each
// Service's Serve is launched on its own goroutine. If a Start fails, the
// components started before it are stopped.
//
// Stopping goes in reverse start order within one budget of StopTimeout: a
// component that has not stopped when the budget runs out is logged,
// reported with ErrStopTimeout and abandoned (its goroutines are left to
// finish on their own, as the process is expected to exit), and the
// remaining components are still asked to stop, with an expired context:
// unless they return at once, they are reported late too.
//
// Run returns nil after a stop requested through ctx. Otherwise it returns
// the failures in the order they happened: the Serve failure or Start error
// that ended the run first, then errors and timeouts from stopping.
func (g *Group) Run(ctx context.Context) error {
	if !g.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("run: group %q: Run called more than once", g.cfg.Name)
	}
	if err := g.checkComponents(); err != nil {
		return err
	}
	timeout := g.cfg.StopTimeout
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st := &runState{cancel: cancel}

	started, startErr := g.start(runCtx, st)
	// A Start interrupted because the group was already stopping is not a
	// failure of its own: the reason it stopped is reported instead.
	if startErr != nil && runCtx.Err() != nil && isContextErr(startErr) {
		g.logger.Info("start interrupted", "err", startErr)
		startErr = nil
	}
	if startErr == nil && runCtx.Err() == nil {
		g.logger.Info("running", "components", len(started))
		<-runCtx.Done()
	}
	switch {
	case startErr != nil:
		g.logger.Error("start failed, stopping the components already started", "err", startErr)
	case st.failed():
		g.logger.Error("component failed, stopping", "err", context.Cause(runCtx))
	default:
		g.logger.Info("stopping", "reason", context.Cause(runCtx))
	}

	stopErr := g.stop(ctx, started, timeout)

	errs := append(st.failures(), startErr, stopErr)
	return errors.Join(errs...)
}

// runState collects what the Serve goroutines report while Run waits.
type runState struct {
	cancel context.CancelCauseFunc

	mu   sync.Mutex
	errs []error // Serve exits while the group was running, in order
}

func (s *runState) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
	s.cancel(err)
}

func (s *runState) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs) > 0
}

func (s *runState) failures() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
