package roles

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/run"
)

// registryWatch runs one registry watch in the background as a
// component. Start returns once the watch has applied its first snapshot,
// so the services behind it never answer for a registry they have not
// read yet (NOT_FOUND for a schema that exists, no node for a shard);
// Stop cancels the watch and waits for it.
type registryWatch struct {
	name string
	// watch runs until ctx is done, calling first once it applied its
	// first snapshot.
	watch func(ctx context.Context, first func()) error

	firstOnce sync.Once
	first     chan struct{}
	cancel    context.CancelFunc
	done      chan struct{} // closed when the watch returned, with err set
	err       error
}

func newRegistryWatch(name string, watch func(ctx context.Context, first func()) error) *registryWatch {
	return &registryWatch{name: name, watch: watch, first: make(chan struct{})}
}

func (w *registryWatch) Name() string { return w.name }

func (w *registryWatch) Start(ctx context.Context) error {
	wctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		w.err = w.watch(wctx, func() { w.firstOnce.Do(func() { close(w.first) }) })
	}()
	select {
	case <-w.first:
		return nil
	case <-w.done:
		cancel()
		return fmt.Errorf("%s ended before the first snapshot: %w", w.name, w.err)
	case <-ctx.Done():
		cancel()
		<-w.done
		return fmt.Errorf("%s: waiting for the first snapshot: %w", w.name, ctx.Err())
	}
}

func (w *registryWatch) Stop(ctx context.Context) error {
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

// newSchemaWatch keeps cache in step with the schema registry.
func newSchemaWatch(watcher registry.Watcher, cache *schema.Cache, events *prometheus.CounterVec) *registryWatch {
	return newRegistryWatch("schema-watch", func(ctx context.Context, first func()) error {
		return watcher.Watch(ctx, schemaHandler{Handler: cache, events: events, first: first})
	})
}

// schemaHandler counts the schema events it passes on and reports the
// first snapshot.
type schemaHandler struct {
	registry.Handler
	events *prometheus.CounterVec // banyand_registry_events_total; nil counts nothing
	first  func()
}

func (h schemaHandler) Reset(objs []registry.Object, rev int64) {
	h.Handler.Reset(objs, rev)
	h.first()
}

func (h schemaHandler) Apply(rev int64, events []registry.Event) {
	if h.events != nil {
		for _, ev := range events {
			h.events.WithLabelValues("schema", ev.Type.String()).Inc()
		}
	}
	h.Handler.Apply(rev, events)
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
