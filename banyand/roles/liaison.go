package roles

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/banyand-io/banyand/banyand/schema"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/metadata"
	"github.com/banyand-io/banyand/banyand/metrics"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/banyand/status"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/registry/node"
	"github.com/banyand-io/banyand/pkg/route"
	"github.com/banyand-io/banyand/pkg/run"
)

// DefaultLiaisonHTTPAddr is where a liaison serves BanyanDB's HTTP API
// (/api), the status page, /metrics and health: BanyanDB's HTTP port.
const DefaultLiaisonHTTPAddr = "127.0.0.1:17913"

// Liaison is the cluster's client-facing role: the BanyanDB-compatible API
// backed by the etcd registries and the gRPC publisher to the data nodes.
type Liaison struct {
	server   serverFlags
	HTTPAddr string
	// Pprof serves /debug/pprof/ on the HTTP address (--pprof).
	Pprof    bool
	NodeName string
	Etcd     etcd.ClientConfig
	Queue    pub.Config
	// ClusterTLS secures the streams to the data nodes.
	ClusterTLS security.ClusterClientTLS
	// PartialAnswers lets a query answer OK without data nodes that hold
	// data of its groups but are unreachable (--query-partial-answers).
	PartialAnswers bool
	// TopNPreAggregation answers TopN from the data nodes' rankings
	// (--topn-pre-aggregation; the data nodes must keep them).
	TopNPreAggregation bool

	grpc *grpcServer
	http *httpServer
}

// RegisterFlags implements cli.Role.
func (l *Liaison) RegisterFlags(fs *pflag.FlagSet) {
	l.server.register(fs, DefaultClientAddr)
	fs.StringVar(&l.HTTPAddr, "http-addr", DefaultLiaisonHTTPAddr, "host:port for BanyanDB's HTTP API (/api/, bydbctl), the status page, /metrics, /healthz and /readyz; over TLS with --tls; empty disables")
	registerPprofFlag(fs, &l.Pprof)
	fs.StringVar(&l.NodeName, "node-name", "", "this liaison's name in logs, in the data nodes' view and in the node registry, where it must be unique (default: derived from the bound client address)")
	l.Etcd.RegisterFlags(fs)
	l.Queue.RegisterFlags(fs)
	l.ClusterTLS.RegisterFlags(fs)
	registerTopNFlag(fs, &l.TopNPreAggregation)
	fs.BoolVar(&l.PartialAnswers, "query-partial-answers", false, "answer a query OK even when a data node holding data of its groups is unreachable (counted in banyand_liaison_partial_query_answers_total); "+
		"off, such a query fails with UNAVAILABLE naming the node and its shards")
}

// Validate implements cli.Role.
func (l *Liaison) Validate() error {
	errs := []error{l.server.validate(), l.Etcd.Validate(), l.Queue.Validate(), l.ClusterTLS.Validate()}
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
	cli, err := etcd.NewClientWithLogger(l.Etcd, logger.With("component", "etcd-client"))
	if err != nil {
		return nil, err
	}
	name := l.NodeName
	if name == "" {
		name = "liaison-" + sanitizeName(l.server.GRPCAddr)
	}
	// Every line of this liaison names it, so logs of several merge.
	logger = logger.With("node", name)
	nodeCfg := etcd.NodeConfig{Namespace: l.Etcd.Namespace}
	nodeWatcher, err := etcd.NewNodeWatcher(nodeCfg, cli, logger.With("component", "node-watch"))
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	// The liaison registers too (role liaison), so every status page lists
	// every liaison; placement takes data nodes only (dataNodes).
	registrar, err := etcd.NewNodeRegistrar(nodeCfg, cli, logger.With("component", "node-registrar"))
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	store := etcd.New(etcd.Config{Namespace: l.Etcd.Namespace}, cli, logger.With("component", "registry"))
	router := route.NewRouter()
	placement := liaison.NewPlacement(logger.With("component", "placement"), router)
	cache := schema.NewCache(placement.SetGroups)
	qcfg := l.Queue
	qcfg.NodeName = name
	// A write acked with fewer copies than its group's replicas leaves a
	// hint with a data node that holds one (banyand/handoff).
	qcfg.UnderReplicated = pub.HintCopies
	sec := security.NewMetrics(true)
	if qcfg.TLS, err = l.ClusterTLS.Config(logger, sec); err != nil {
		_ = cli.Close()
		return nil, err
	}
	batches := metrics.NewPublisherObserver()
	publisher := pub.New(qcfg, pub.Deps{Placement: router, Logger: logger.With("component", "publisher"), Observer: batches})
	reg := metrics.NewRegistry()
	roleMetrics := metrics.RegisterLiaison(reg, metrics.LiaisonSources{
		PubStats: publisher.Stats, PubBatch: batches, MaxBytes: qcfg.MaxBytesPerNode, Schema: store, Cache: cache, NodeWatch: nodeWatcher.Stats, Security: sec,
	})
	holderWatcher, err := etcd.NewHolderWatcher(nodeCfg, cli, logger.With("component", "holder-watch"))
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	holders := liaison.NewHolders(router)
	services := liaison.NewServices(liaison.WriteConfig{AckTimeout: l.server.AckTimeout}, liaison.Deps{
		Logger: logger.With("component", "liaison"), Schema: cache, Queue: publisher, Counters: roleMetrics.Writes,
		Holders: holders, Answerers: holders, AllowPartial: l.PartialAnswers, PartialAnswers: roleMetrics.PartialAnswers,
		TopNRankings: l.TopNPreAggregation,
	})
	watch := newNodeWatch(nodeWatcher, placement, logger, roleMetrics.RegistryEvents)
	meta := metadata.New(liaison.ReadYourWrites(store, cache))
	opts, api, err := l.server.clientServerOptions(logger, roleMetrics.GRPC, sec)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	l.grpc = newGRPCServer("client-grpc", l.server.GRPCAddr, logger, opts, func(s *grpc.Server) {
		meta.Register(s)
		services.Register(s)
	})
	page := status.New(status.Sources{
		Self:     l.selfNode,
		Nodes:    watch.Nodes,
		PubStats: publisher.Stats,
		Table:    router.Current,
		Writes:   reg,
		Hinted:   holders.Hinted,
	})
	gw := l.server.newGateway(logger, api, l.ClientAddr)
	l.http = newHTTPServer(httpConfig{Addr: l.HTTPAddr, Pprof: l.Pprof, Status: page, API: gw, TLS: api.HTTP}, logger, reg)
	return []run.Component{
		l.http,
		page,
		etcdClientComponent(l.Etcd, cli.Close),
		newSchemaWatch(store, cache, roleMetrics.RegistryEvents),
		watch,
		newHolderWatch(holderWatcher, holders),
		&funcComponent{name: "publisher", stop: publisher.Close},
		l.grpc,
		gw,
		&registration{what: "liaison", retryTaken: liaisonRegistrationRetry, node: l.registryNode, registrar: registrar, logger: logger},
		readyMarker{l.http},
	}, nil
}

// registryName is this liaison's name in the registry and on status
// pages: --node-name, or one derived from the bound client address (not
// the configured one, which may say port 0).
func (l *Liaison) registryName() string {
	if l.NodeName != "" {
		return l.NodeName
	}
	return "liaison-" + sanitizeName(advertised(l.ClientAddr()))
}

// registryNode is this liaison's registration: its client address, for
// the status pages of the others.
func (l *Liaison) registryNode() *databasev1.Node {
	return &databasev1.Node{
		Metadata:    &commonv1.Metadata{Name: l.registryName()},
		Roles:       []databasev1.Role{databasev1.Role_ROLE_LIAISON},
		GrpcAddress: advertised(l.ClientAddr()),
		HttpAddress: l.HTTPBoundAddr(),
		CreatedAt:   timestamppb.Now(),
	}
}

// nodeWatch feeds the live data nodes into the placement and keeps the
// last snapshot of every registered node for the status page. As a
// component it starts once the first snapshot is in, so the liaison does
// not refuse writes for want of nodes it merely has not heard of yet.
type nodeWatch struct {
	*registryWatch
	nodes atomic.Pointer[[]*databasev1.Node]
}

func newNodeWatch(w node.Watcher, p *liaison.Placement, logger *slog.Logger, events *prometheus.CounterVec) *nodeWatch {
	nw := &nodeWatch{}
	nw.registryWatch = newRegistryWatch("node-watch", func(ctx context.Context, first func()) error {
		return w.Watch(ctx, func(u node.Update) {
			all := slices.Clone(u.Nodes)
			nw.nodes.Store(&all)
			nodes := dataNodes(u.Nodes)
			p.SetNodes(nodes)
			for _, ev := range u.Events {
				if events != nil {
					events.WithLabelValues("node", ev.Type.String()).Inc()
				}
				logger.Info("data node "+ev.Type.String(), "node", ev.Name(), "nodes", len(nodes))
			}
			first()
		})
	})
	return nw
}

// Nodes is the last snapshot of the registered nodes (any role); nil
// before the first.
func (w *nodeWatch) Nodes() []*databasev1.Node {
	if p := w.nodes.Load(); p != nil {
		return *p
	}
	return nil
}

// newHolderWatch follows the holder records into holders; as a component
// it starts once they are known, so no query answers before the liaison
// knows which nodes it must hear from.
func newHolderWatch(w *etcd.HolderWatcher, holders *liaison.Holders) *registryWatch {
	return newRegistryWatch("holder-watch", func(ctx context.Context, first func()) error {
		return w.Watch(ctx, func(h etcd.Holders) {
			holders.Set(h.Held, h.Hinted)
			first()
		})
	})
}

// selfNode is this liaison as the status page lists it.
func (l *Liaison) selfNode() status.Node {
	return status.Node{
		Name: l.registryName(), Roles: "liaison", GRPCAddr: l.ClientAddr(), HTTPAddr: l.HTTPBoundAddr(),
		Health: readiness(l.http), Self: true,
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
