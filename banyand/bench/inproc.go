package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/run"
)

// startTimeout bounds how long an in-process role may take to start.
const startTimeout = 30 * time.Second

// inproc is what --standalone or --cluster runs in this process: roles,
// and for a cluster an embedded etcd, with their data under dir.
type inproc struct {
	what string // "standalone" or "cluster"
	addr string // the client address to load
	dir  string
	keep bool
	logw io.Writer

	roles []*roleRun // in start order
	etcd  *etcd.Embedded
}

// roleRun is one role's component group running in the background.
type roleRun struct {
	name   string
	cancel context.CancelFunc
	done   chan error
}

func newInproc(what string, keep bool, logw io.Writer) (*inproc, error) {
	dir, err := os.MkdirTemp("", "banyand-bench-")
	if err != nil {
		return nil, fmt.Errorf("%s data directory: %w", what, err)
	}
	return &inproc{what: what, dir: dir, keep: keep, logw: logw}, nil
}

func (p *inproc) logger(role string) *slog.Logger {
	return slog.New(slog.NewTextHandler(p.logw, &slog.HandlerOptions{Level: slog.LevelWarn})).With("role", role)
}

// start runs a role's components and returns once ready() holds. The role
// is stopped by p.stop.
func (p *inproc) start(ctx context.Context, name string, validate func() error,
	components func(*slog.Logger) ([]run.Component, error), ready func() bool) error {
	logger := p.logger(name)
	if err := validate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	comps, err := components(logger)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	g := run.NewGroup(run.Config{Name: name, StopTimeout: 30 * time.Second}, logger, comps...)
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &roleRun{name: name, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- g.Run(runCtx) }()
	p.roles = append(p.roles, r)
	return waitFor(ctx, name+" to start", r.done, ready)
}

// waitFor polls ready until it holds, done reports an exit, ctx ends or
// startTimeout passes.
func waitFor(ctx context.Context, what string, done chan error, ready func() bool) error {
	deadline := time.Now().Add(startTimeout)
	for !ready() {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("waiting for %s: exited: %w", what, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not done after %s", what, startTimeout)
		}
	}
	return nil
}

// stop stops the roles in reverse order, then etcd, and removes the data
// unless asked to keep it.
func (p *inproc) stop() error {
	var errs []error
	for _, r := range slices.Backward(p.roles) {
		r.cancel()
		if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, err))
		}
	}
	p.roles = nil
	if p.etcd != nil {
		p.etcd.Close()
		p.etcd = nil
	}
	if p.keep {
		fmt.Fprintf(p.logw, "kept the %s's data in %s\n", p.what, p.dir)
	} else if err := os.RemoveAll(p.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// startStandalone starts roles.Standalone on 127.0.0.1:0 with its data in
// a new temporary directory and returns once it listens. Its logs
// (warnings and errors only) go to logw.
func startStandalone(ctx context.Context, keep bool, logw io.Writer) (*inproc, error) {
	p, err := newInproc("standalone", keep, logw)
	if err != nil {
		return nil, err
	}
	var sa roles.Standalone
	sa.SetDefaults("127.0.0.1:0", p.dir)
	if err := p.start(ctx, "standalone", sa.Validate, sa.Components, func() bool { return sa.ClientAddr() != "" }); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	p.addr = sa.ClientAddr()
	fmt.Fprintf(logw, "started an in-process standalone on %s, data in %s\n", p.addr, p.dir)
	return p, nil
}

// clusterDataNodes is how many data nodes --cluster starts.
const clusterDataNodes = 2

// startCluster starts an embedded etcd, clusterDataNodes data nodes and one
// liaison in this process, all on 127.0.0.1 ports the kernel picks, with
// their data in a new temporary directory, and returns once the liaison
// routes to every data node. Client, liaison and data nodes then share the
// process and its CPUs: a quick comparison between commits, not the
// separate-process numbers of scripts/bench.sh.
func startCluster(ctx context.Context, keep bool, logw io.Writer) (*inproc, error) {
	p, err := newInproc("cluster", keep, logw)
	if err != nil {
		return nil, err
	}
	if err := p.startCluster(ctx); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	fmt.Fprintf(logw, "started an in-process cluster (etcd %s, %d data nodes, liaison %s), data in %s\n",
		p.etcd.Endpoint(), clusterDataNodes, p.addr, p.dir)
	return p, nil
}

func (p *inproc) startCluster(ctx context.Context) error {
	var err error
	if p.etcd, err = etcd.StartEmbedded(filepath.Join(p.dir, "etcd")); err != nil {
		return err
	}
	endpoints := []string{p.etcd.Endpoint()}
	var etcdCfg etcd.ClientConfig
	for i := range clusterDataNodes {
		var s roles.Storage
		s.SetDefaults()
		s.GRPCAddr, s.HTTPAddr = "127.0.0.1:0", ""
		s.NodeName = fmt.Sprintf("data-%d", i)
		s.DataPath = filepath.Join(p.dir, s.NodeName)
		s.Etcd.Endpoints = endpoints
		etcdCfg = s.Etcd
		if err := p.start(ctx, s.NodeName, s.Validate, s.Components, func() bool { return s.ClusterAddr() != "" }); err != nil {
			return err
		}
	}
	if err := waitRegistered(ctx, etcdCfg, clusterDataNodes); err != nil {
		return err
	}
	var l roles.Liaison
	l.SetDefaults()
	l.SetClientAddr("127.0.0.1:0")
	l.HTTPAddr = ""
	l.Etcd.Endpoints = endpoints
	if err := p.start(ctx, "liaison", l.Validate, l.Components, func() bool { return l.ClientAddr() != "" }); err != nil {
		return err
	}
	p.addr = l.ClientAddr()
	return nil
}

// waitRegistered waits until n data nodes are in the node registry, so the
// liaison's first snapshot already holds them all.
func waitRegistered(ctx context.Context, cfg etcd.ClientConfig, n int) error {
	cli, err := etcd.NewClient(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return etcd.WaitForNodes(wctx, etcd.NodeConfig{Namespace: cfg.Namespace}, cli, n)
}
