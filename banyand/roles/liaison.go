package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/metadata"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/registry/node"
	"github.com/banyand-io/banyand/pkg/route"
	"github.com/banyand-io/banyand/pkg/run"
)

// DefaultLiaisonHTTPAddr is where a liaison serves /metrics and health.
const DefaultLiaisonHTTPAddr = "127.0.0.1:17913"

// Liaison is the cluster's client-facing role: the BanyanDB-compatible API
// backed by the etcd registries and the gRPC publisher to the data nodes.
type Liaison struct {
	server   serverFlags
	HTTPAddr string
	NodeName string
	Etcd     etcd.ClientConfig
	Queue    pub.Config
	// ClusterTLS secures the streams to the data nodes.
	ClusterTLS ClusterClientTLS

	grpc *grpcServer
	http *httpServer
}

// RegisterFlags implements cli.Role.
func (l *Liaison) RegisterFlags(fs *pflag.FlagSet) {
	l.server.register(fs, DefaultClientAddr)
	fs.StringVar(&l.HTTPAddr, "http-addr", DefaultLiaisonHTTPAddr, "host:port for /metrics, /healthz and /readyz; empty disables")
	fs.StringVar(&l.NodeName, "node-name", "", "this liaison's name in logs and in the data nodes' view (default: derived from --grpc-addr)")
	l.Etcd.RegisterFlags(fs)
	l.Queue.RegisterFlags(fs)
	l.ClusterTLS.register(fs)
}

// Validate implements cli.Role.
func (l *Liaison) Validate() error {
	errs := []error{l.server.validate(), l.Etcd.Validate(), l.Queue.Validate(), l.ClusterTLS.validate()}
	if l.HTTPAddr != "" {
		errs = append(errs, checkAddr("--http-addr", l.HTTPAddr))
	}
	return errors.Join(errs...)
}

// SetDefaults fills what flags would, for callers that build the role in
// code (tests).
func (l *Liaison) SetDefaults() {
	l.RegisterFlags(pflag.NewFlagSet("liaison", pflag.ContinueOnError))
}

// SetClientAddr overrides --grpc-addr (tests use port 0).
func (l *Liaison) SetClientAddr(addr string) { l.server.GRPCAddr = addr }

// ClientAddr is the bound client address; empty before the role started.
func (l *Liaison) ClientAddr() string { return addrOf(l.grpc) }

// HTTPBoundAddr is the bound /metrics address; empty before the role
// started or when HTTPAddr is empty.
func (l *Liaison) HTTPBoundAddr() string { return httpAddrOf(l.http) }

// Components implements cli.Role.
func (l *Liaison) Components(logger *slog.Logger) ([]run.Component, error) {
	cli, err := etcd.NewClient(l.Etcd, logger.With("component", "etcd-client"))
	if err != nil {
		return nil, err
	}
	name := l.NodeName
	if name == "" {
		name = "liaison-" + sanitizeName(l.server.GRPCAddr)
	}
	nodeCfg := etcd.NodeConfig{Namespace: l.Etcd.Namespace}
	nodeWatcher, err := etcd.NewNodeWatcher(nodeCfg, cli, logger.With("component", "node-watch"))
	if err != nil {
		return nil, err
	}
	store := etcd.New(etcd.Config{Namespace: l.Etcd.Namespace}, cli, logger.With("component", "registry"))
	router := route.NewRouter()
	placement := liaison.NewPlacement(logger.With("component", "placement"), router)
	cache := liaison.NewSchemaCache(logger.With("component", "schema"), placement.SetGroups)
	l.http = newHTTPServer(l.HTTPAddr, logger)
	reg := l.http.reg
	qcfg := l.Queue
	qcfg.NodeName = name
	if qcfg.TLS, err = l.ClusterTLS.config(logger, reg); err != nil {
		_ = cli.Close()
		return nil, err
	}
	publisher := pub.New(qcfg, pub.Deps{Placement: router, Logger: logger.With("component", "publisher")})
	services := liaison.NewServices(liaison.WriteConfig{AckTimeout: l.server.AckTimeout}, liaison.Deps{
		Logger: logger.With("component", "liaison"), Schema: cache, Queue: publisher, Counters: newWriteCounters(reg),
	})
	reg.MustRegister(newPublisherCollector(publisher, qcfg.MaxBytesPerNode))
	registerSchemaMetrics(reg, store, cache)
	counterFunc(reg, "banyand_registry_node_watch_skipped_total", "Node registry entries skipped as invalid, each time read.",
		func() int64 { return nodeWatcher.Stats().Skipped })
	counterFunc(reg, "banyand_registry_node_watch_relists_total", "Node watch re-lists after the first list.",
		func() int64 { return nodeWatcher.Stats().Relists })
	meta := metadata.New(liaison.ReadYourWrites(store, cache))
	opts, err := l.server.clientServerOptions(logger, reg)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	l.grpc = newGRPCServer("client-grpc", l.server.GRPCAddr, logger, opts, func(s *grpc.Server) {
		meta.Register(s)
		services.Register(s)
	})
	return []run.Component{
		l.http,
		etcdClientComponent(l.Etcd, cli.Close),
		&schemaWatch{watcher: store, cache: cache, logger: logger},
		newNodeWatch(nodeWatcher, placement, logger),
		&funcComponent{name: "publisher", stop: publisher.Close},
		l.grpc,
		readyMarker{l.http},
	}, nil
}

// nodeWatch feeds the live data nodes into the placement. Start waits for
// the first snapshot so the liaison does not refuse writes for want of nodes
// it merely has not heard of yet.
type nodeWatch struct {
	watcher   node.Watcher
	placement *liaison.Placement
	logger    *slog.Logger

	first  chan struct{}
	cancel context.CancelFunc
	done   chan struct{} // closed when the watch returned, with err set
	err    error
}

func newNodeWatch(w node.Watcher, p *liaison.Placement, logger *slog.Logger) *nodeWatch {
	return &nodeWatch{watcher: w, placement: p, logger: logger, first: make(chan struct{})}
}

func (w *nodeWatch) Name() string { return "node-watch" }

func (w *nodeWatch) Start(ctx context.Context) error {
	wctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done = make(chan struct{})
	seen := false
	go func() {
		defer close(w.done)
		w.err = w.watcher.Watch(wctx, func(u node.Update) {
			nodes := dataNodes(u.Nodes)
			w.placement.SetNodes(nodes)
			for _, ev := range u.Events {
				w.logger.Info("data node "+ev.Type.String(), "node", ev.Name(), "nodes", len(nodes))
			}
			if !seen {
				seen = true
				close(w.first)
			}
		})
	}()
	select {
	case <-w.first:
		return nil
	case <-w.done:
		cancel()
		return fmt.Errorf("node watch ended before the first snapshot: %w", w.err)
	case <-ctx.Done():
		cancel()
		<-w.done
		return ctx.Err()
	}
}

func (w *nodeWatch) Stop(ctx context.Context) error {
	w.cancel()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dataNodes is the placement's view of the registered data nodes. A node's
// "capacity" label, a positive integer, weights its share of shards.
func dataNodes(nodes []*databasev1.Node) []route.Node {
	out := make([]route.Node, 0, len(nodes))
	for _, n := range nodes {
		if !slices.Contains(n.GetRoles(), databasev1.Role_ROLE_DATA) {
			continue
		}
		var weight uint32
		if c, err := strconv.ParseUint(n.GetLabels()["capacity"], 10, 32); err == nil {
			weight = uint32(c)
		}
		out = append(out, route.Node{Name: n.GetMetadata().GetName(), Addr: n.GetGrpcAddress(), Weight: weight})
	}
	return out
}

func addrOf(s *grpcServer) string {
	if s == nil {
		return ""
	}
	return s.Addr()
}

func httpAddrOf(h *httpServer) string {
	if h == nil {
		return ""
	}
	return h.Addr()
}
