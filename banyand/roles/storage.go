package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/banyand-io/banyand/banyand/schema"

	"github.com/spf13/pflag"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/banyand/handoff"
	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/metrics"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/queue/sub"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/route"
	"github.com/banyand-io/banyand/pkg/run"
)

// DefaultStorageHTTPAddr is where a data node serves /metrics and health.
const DefaultStorageHTTPAddr = "127.0.0.1:17915"

// Storage is a data node: the cluster-protocol subscriber in front of the
// storage engine, registered in etcd so liaisons route to it.
type Storage struct {
	GRPCAddr      string
	AdvertiseAddr string
	HTTPAddr      string
	// Pprof serves /debug/pprof/ on the HTTP address (--pprof).
	Pprof    bool
	DataPath string
	// engine is --write-buffer-size and --write-log-gather.
	engine engineFlags
	// TopNPreAggregation keeps the top-N rankings as writes arrive
	// (--topn-pre-aggregation).
	TopNPreAggregation bool
	NodeName           string
	Capacity           uint
	Etcd               etcd.ClientConfig
	NodeTTL            time.Duration
	Sub                sub.Config
	// ClusterTLS secures the cluster protocol (Sub.TLS is built from it).
	ClusterTLS security.ClusterServerTLS
	// DebugListenerDelay delays every write batch (hidden fault-injection
	// flag --debug-listener-delay; see docs/design/faults.md).
	DebugListenerDelay time.Duration
	// HandoffInterval is how often kept hints are handed off (--handoff-interval).
	HandoffInterval time.Duration
	// HandoffCAFile verifies the other data nodes when this one hands off
	// hints to them over TLS (--handoff-tls-ca-file).
	HandoffCAFile string

	mu   sync.Mutex
	lis  net.Listener
	http *httpServer
}

// RegisterFlags implements cli.Role.
func (s *Storage) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.GRPCAddr, "grpc-addr", DefaultClusterAddr, "host:port of the cluster protocol (liaisons connect here)")
	fs.StringVar(&s.AdvertiseAddr, "advertise-addr", "", "address liaisons should dial, registered in etcd (default: the bound --grpc-addr)")
	fs.StringVar(&s.HTTPAddr, "http-addr", DefaultStorageHTTPAddr, "host:port for /metrics, /healthz and /readyz; empty disables")
	registerPprofFlag(fs, &s.Pprof)
	fs.StringVar(&s.DataPath, "data-path", DefaultDataPath, "directory for this node's data")
	s.engine.register(fs)
	registerTopNFlag(fs, &s.TopNPreAggregation)
	fs.StringVar(&s.NodeName, "node-name", "", "this data node's name in the registry; keeps its shards across restarts (default: derived from the advertised address)")
	fs.UintVar(&s.Capacity, "capacity", 0, "relative capacity: a node of capacity 2 takes about twice the shards of one of capacity 1 (0 = 1)")
	fs.DurationVar(&s.NodeTTL, "node-lease-ttl", etcd.DefaultNodeTTL, "how long this node stays routable after it dies without deregistering (whole seconds)")
	fs.IntVar(&s.Sub.MaxRecvMsgSize, "max-recv-msg-size", sub.DefaultMaxRecvMsgSize, "largest cluster-protocol batch accepted, in bytes")
	s.Etcd.RegisterFlags(fs)
	s.ClusterTLS.RegisterFlags(fs)
	fs.DurationVar(&s.HandoffInterval, "handoff-interval", handoff.DefaultInterval, "how often this node tries to copy the writes it keeps hints of to the data nodes that missed them")
	fs.StringVar(&s.HandoffCAFile, "handoff-tls-ca-file", "", "PEM CAs to verify other data nodes with when handing off hints, with --cluster-tls-cert-file as the client certificate (default: the system's CAs)")
	fs.DurationVar(&s.DebugListenerDelay, "debug-listener-delay", 0, "fault injection: wait this long before handling each write batch")
	_ = fs.MarkHidden("debug-listener-delay")
}

// Validate implements cli.Role.
func (s *Storage) Validate() error {
	errs := []error{checkAddr("--grpc-addr", s.GRPCAddr), s.Etcd.Validate(), s.Sub.Validate(),
		(&etcd.NodeConfig{TTL: s.NodeTTL}).Validate(), s.ClusterTLS.Validate()}
	if s.AdvertiseAddr != "" {
		errs = append(errs, checkAddr("--advertise-addr", s.AdvertiseAddr))
	}
	if s.HTTPAddr != "" {
		errs = append(errs, checkAddr("--http-addr", s.HTTPAddr))
	}
	if s.DataPath == "" {
		errs = append(errs, errors.New("--data-path is required"))
	}
	errs = append(errs, s.engine.validate())
	if strings.ContainsAny(s.NodeName, "/\x00") {
		errs = append(errs, fmt.Errorf("--node-name %q: must not contain '/'", s.NodeName))
	}
	return errors.Join(errs...)
}

// SetDefaults fills what flags would, for callers that build the role in code.
func (s *Storage) SetDefaults() {
	s.RegisterFlags(pflag.NewFlagSet("storage", pflag.ContinueOnError))
}

// ClusterAddr is the bound cluster-protocol address; empty before start.
func (s *Storage) ClusterAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis == nil {
		return ""
	}
	return s.lis.Addr().String()
}

// HTTPBoundAddr is the bound /metrics address; empty before the role
// started or when HTTPAddr is empty.
func (s *Storage) HTTPBoundAddr() string { return httpAddrOf(s.http) }

// Components implements cli.Role.
func (s *Storage) Components(logger *slog.Logger) ([]run.Component, error) {
	if s.NodeName != "" {
		logger = logger.With("node", s.NodeName)
	}
	cli, err := etcd.NewClientWithLogger(s.Etcd, logger.With("component", "etcd-client"))
	if err != nil {
		return nil, err
	}
	registryStore := etcd.New(etcd.Config{Namespace: s.Etcd.Namespace}, cli, logger.With("component", "registry"))
	registrar, err := etcd.NewNodeRegistrar(etcd.NodeConfig{Namespace: s.Etcd.Namespace, TTL: s.NodeTTL}, cli, logger.With("component", "node-registrar"))
	if err != nil {
		return nil, err
	}
	// The data node follows the schema for group options (segment length,
	// retention) and, with the node table, to place the writes it hands
	// off. Writes carry everything else.
	router := route.NewRouter()
	placement := liaison.NewPlacement(logger.With("component", "placement"), router)
	cache := schema.NewCache(placement.SetGroups)
	store := storage.New(s.engine.storageConfig(storageDir(s.DataPath)), cache, logger)
	holders, err := etcd.NewHolderRecorder(etcd.NodeConfig{Namespace: s.Etcd.Namespace, TTL: s.NodeTTL}, cli,
		func() string { return s.registryNode().GetMetadata().GetName() })
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	store.RecordHolders(holders)
	if s.TopNPreAggregation {
		store.PreAggregateTopN(cache)
	}
	nodeWatcher, err := etcd.NewNodeWatcher(etcd.NodeConfig{Namespace: s.Etcd.Namespace}, cli, logger.With("component", "node-watch"))
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	sec := security.NewMetrics(false)
	hand, handoffPub, err := s.handoff(logger, router, holders, sec)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	subCfg := s.Sub
	if subCfg.NodeName == "" {
		subCfg.NodeName = s.NodeName
	}
	if err := s.ClusterTLS.Apply(&subCfg, logger, sec); err != nil {
		_ = cli.Close()
		return nil, err
	}
	server := sub.New(subCfg, logger.With("component", "subscriber"))
	reg := metrics.NewRegistry()
	roleMetrics := metrics.RegisterStorage(reg, metrics.StorageSources{
		Schema: registryStore, Cache: cache, Registrar: registrar.Stats, Security: sec, Engine: metrics.EngineStatsOf(store),
		Handoff: hand.Stats,
	})
	s.http = newHTTPServer(httpConfig{Addr: s.HTTPAddr, Pprof: s.Pprof}, logger, reg)

	listeners := store.Listeners()
	listeners[queue.TopicHint] = hand
	serveSub := &subscriberComponent{role: s, server: server, listeners: listeners, metrics: roleMetrics.Listeners, logger: logger}
	return []run.Component{
		s.http,
		etcdClientComponent(s.Etcd, cli.Close),
		newSchemaWatch(registryStore, cache, roleMetrics.RegistryEvents),
		newNodeWatch(nodeWatcher, placement, logger, roleMetrics.RegistryEvents),
		store,
		&retention{store: store, ttls: cache.TTLs, logger: logger},
		&funcComponent{name: "handoff-publisher", stop: handoffPub.Close},
		hand,
		serveSub,
		&registration{what: "data node", node: s.registryNode, registrar: registrar, logger: logger},
		readyMarker{s.http},
	}, nil
}

// handoff builds the hint store and the publisher it hands writes off
// with: one that fails a write short of copies, so that a hint is
// forgotten only once its write has them all.
func (s *Storage) handoff(logger *slog.Logger, router *route.Router, marker handoff.Marker, sec *security.Metrics) (*handoff.Store, *pub.Client, error) {
	qcfg := pub.Config{NodeName: "handoff-" + s.NodeName, UnderReplicated: pub.FailCopies}
	if s.ClusterTLS.CertFile != "" {
		ctls := security.ClusterClientTLS{CAFile: s.HandoffCAFile, CertFile: s.ClusterTLS.CertFile, KeyFile: s.ClusterTLS.KeyFile}
		var err error
		if qcfg.TLS, err = ctls.Config(logger, sec); err != nil {
			return nil, nil, err
		}
	}
	client := pub.New(qcfg, pub.Deps{Placement: router, Logger: logger.With("component", "handoff-publisher")})
	hand := handoff.New(handoff.Config{
		Dir:      filepath.Join(s.DataPath, "hints"),
		Topics:   []queue.Topic{queue.TopicStreamWrite, queue.TopicMeasureWrite, queue.TopicPropertyWrite, queue.TopicTraceWrite},
		Interval: s.HandoffInterval,
	}, handoff.Deps{Queue: client, Marker: marker, Logger: logger})
	return hand, client, nil
}

// subscriberComponent serves the cluster protocol in front of the store.
type subscriberComponent struct {
	role      *Storage
	server    *sub.Server
	listeners map[queue.Topic]queue.Listener
	metrics   *metrics.Listeners
	logger    *slog.Logger
}

func (c *subscriberComponent) Name() string { return "subscriber" }

func (c *subscriberComponent) Start(context.Context) error {
	if err := c.metrics.Subscribe(c.server, delayWrites(c.listeners, c.role.DebugListenerDelay)); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	lis, err := net.Listen("tcp", c.role.GRPCAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.role.GRPCAddr, err)
	}
	c.role.mu.Lock()
	c.role.lis = lis
	c.role.mu.Unlock()
	c.logger.Info("cluster protocol listening", "addr", lis.Addr().String())
	return nil
}

func (c *subscriberComponent) Serve(context.Context) error {
	return c.server.Serve(c.role.lis)
}

func (c *subscriberComponent) Stop(ctx context.Context) error { return c.server.Stop(ctx) }

// registryNode is this data node's registration.
func (s *Storage) registryNode() *databasev1.Node {
	addr := s.AdvertiseAddr
	if addr == "" {
		addr = advertised(s.ClusterAddr())
	}
	name := s.NodeName
	if name == "" {
		name = "data-" + sanitizeName(addr)
	}
	n := &databasev1.Node{
		Metadata:    &commonv1.Metadata{Name: name},
		Roles:       []databasev1.Role{databasev1.Role_ROLE_DATA},
		GrpcAddress: addr,
		HttpAddress: s.http.Addr(),
		CreatedAt:   timestamppb.Now(),
	}
	if s.Capacity > 0 {
		n.Labels = map[string]string{"capacity": fmt.Sprint(s.Capacity)}
	}
	return n
}

// advertised turns a bound address into one others can dial: an
// unspecified host (0.0.0.0, ::) becomes this machine's hostname.
func advertised(bound string) string {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, port)
		}
	}
	return bound
}

// sanitizeName makes an address usable as a registry name.
func sanitizeName(addr string) string {
	return strings.NewReplacer(":", "-", "/", "-", "[", "", "]", "").Replace(addr)
}
