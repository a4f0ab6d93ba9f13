package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/run"
)

// schemaWatch keeps a SchemaCache in step with the registry. Start returns
// once the cache holds a full snapshot, so the services behind it never
// answer NOT_FOUND for a schema that exists but was not loaded yet.
type schemaWatch struct {
	watcher registry.Watcher
	cache   *liaison.SchemaCache
	logger  *slog.Logger
	events  *prometheus.CounterVec // banyand_registry_events_total; nil counts nothing

	cancel context.CancelFunc
	done   chan struct{} // closed when the watch returned, with err set
	err    error
}

func (w *schemaWatch) Name() string { return "schema-watch" }

// countingHandler counts the schema events it passes on.
type countingHandler struct {
	registry.Handler
	events *prometheus.CounterVec
}

func (h countingHandler) Apply(rev int64, events []registry.Event) {
	if h.events != nil {
		for _, ev := range events {
			h.events.WithLabelValues("schema", ev.Type.String()).Inc()
		}
	}
	h.Handler.Apply(rev, events)
}

func (w *schemaWatch) Start(ctx context.Context) error {
	wctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done = make(chan struct{})
	go func() {
		w.err = w.watcher.Watch(wctx, countingHandler{Handler: w.cache, events: w.events})
		close(w.done)
	}()
	select {
	case <-w.cache.Ready():
		return nil
	case <-w.done:
		cancel()
		return fmt.Errorf("schema watch ended before the first snapshot: %w", w.err)
	case <-ctx.Done():
		cancel()
		<-w.done
		return fmt.Errorf("waiting for the schema snapshot: %w", ctx.Err())
	}
}

func (w *schemaWatch) Stop(ctx context.Context) error {
	w.cancel()
	select {
	case <-w.done:
		if w.err != nil && !errors.Is(w.err, context.Canceled) {
			return w.err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// funcComponent adapts closures to run's optional interfaces.
type funcComponent struct {
	name  string
	start func(ctx context.Context) error
	stop  func(ctx context.Context) error
}

func (c *funcComponent) Name() string { return c.name }

func (c *funcComponent) Start(ctx context.Context) error {
	if c.start == nil {
		return nil
	}
	return c.start(ctx)
}

func (c *funcComponent) Stop(ctx context.Context) error {
	if c.stop == nil {
		return nil
	}
	return c.stop(ctx)
}

// defaultTimeout gives a stop without a deadline one.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// etcdClientComponent closes the etcd client last. At start it checks
// that etcd and this node accept each other's TLS certificates, so a
// wrong CA or client certificate fails the start with a reason instead of
// registry calls that only time out.
func etcdClientComponent(cfg etcd.ClientConfig, closeClient func() error) run.Component {
	return &funcComponent{
		name: "etcd-client",
		start: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
			defer cancel()
			if err := etcd.CheckTLS(ctx, cfg); err != nil {
				// A component that failed to start is not stopped.
				_ = closeClient()
				return err
			}
			return nil
		},
		stop: func(context.Context) error { return closeClient() },
	}
}
