package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/banyand-io/banyand/banyand/schema"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/metadata"
	"github.com/banyand-io/banyand/banyand/metrics"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/banyand/status"
	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/pkg/bus"
	"github.com/banyand-io/banyand/pkg/registry/local"
	"github.com/banyand-io/banyand/pkg/run"
)

// Standalone runs liaison and storage in one process: the local schema
// registry, the storage engine and the liaison services joined by the
// in-process bus, which hands the liaison's batches to the storage
// listeners as they are. No etcd, no network hop between them.
type Standalone struct {
	server   serverFlags
	DataPath string
	// engine is --write-buffer-size and --write-log-gather.
	engine   engineFlags
	HTTPAddr string
	// Pprof serves /debug/pprof/ on the HTTP address (--pprof).
	Pprof bool
	// TopNPreAggregation keeps the top-N rankings as writes arrive and
	// answers TopN from them (--topn-pre-aggregation).
	TopNPreAggregation bool

	grpc *grpcServer
	http *httpServer
}

// RegisterFlags implements cli.Role.
func (s *Standalone) RegisterFlags(fs *pflag.FlagSet) {
	s.server.register(fs, DefaultClientAddr)
	fs.StringVar(&s.DataPath, "data-path", DefaultDataPath, "directory for the schema registry and the data")
	s.engine.register(fs)
	registerTopNFlag(fs, &s.TopNPreAggregation)
	fs.StringVar(&s.HTTPAddr, "http-addr", DefaultLiaisonHTTPAddr, "host:port for BanyanDB's HTTP API (/api/, bydbctl), the status page, /metrics, /healthz and /readyz; over TLS with --tls; empty disables")
	registerPprofFlag(fs, &s.Pprof)
}

// Validate implements cli.Role.
func (s *Standalone) Validate() error {
	var errs []error
	errs = append(errs, s.server.validate())
	if s.DataPath == "" {
		errs = append(errs, errors.New("--data-path is required"))
	}
	errs = append(errs, s.engine.validate())
	if s.HTTPAddr != "" {
		errs = append(errs, checkAddr("--http-addr", s.HTTPAddr))
	}
	return errors.Join(errs...)
}

// SetDefaults fills what flags would, for callers that build the role in
// code (tests); addr "" keeps the default.
func (s *Standalone) SetDefaults(addr, dataPath string) {
	fs := pflag.NewFlagSet("standalone", pflag.ContinueOnError)
	s.RegisterFlags(fs)
	if addr != "" {
		s.server.GRPCAddr = addr
	}
	s.DataPath = dataPath
	s.HTTPAddr = ""
}

// ClientAddr is the bound client address; empty before the role started.
func (s *Standalone) ClientAddr() string {
	if s.grpc == nil {
		return ""
	}
	return s.grpc.Addr()
}

// HTTPBoundAddr is the bound /metrics address; empty before the role
// started or when HTTPAddr is empty.
func (s *Standalone) HTTPBoundAddr() string { return httpAddrOf(s.http) }

// Components implements cli.Role.
func (s *Standalone) Components(logger *slog.Logger) ([]run.Component, error) {
	reg := local.New(local.Config{Dir: registryDir(s.DataPath)}, logger.With("component", "registry"))
	q := bus.New(bus.Config{NodeName: "standalone"})
	cache := schema.NewCache(nil)
	store := storage.New(s.engine.storageConfig(storageDir(s.DataPath)), cache, logger)
	if s.TopNPreAggregation {
		store.PreAggregateTopN(cache)
	}
	promReg := metrics.NewRegistry()
	sec := security.NewMetrics(true)
	roleMetrics := metrics.RegisterStandalone(promReg, metrics.StandaloneSources{
		Schema: reg, Cache: cache, Security: sec, Engine: metrics.EngineStatsOf(store),
	})
	services := liaison.NewServices(liaison.WriteConfig{AckTimeout: s.server.AckTimeout}, liaison.Deps{
		Logger: logger.With("component", "liaison"), Schema: cache, Queue: q, Counters: roleMetrics.Writes,
		Answerers: liaison.OneStore{}, TopNRankings: s.TopNPreAggregation,
	})
	listeners := roleMetrics.Listeners
	meta := metadata.New(liaison.ReadYourWrites(reg, cache))
	opts, api, err := s.server.clientServerOptions(logger, roleMetrics.GRPC, sec)
	if err != nil {
		return nil, err
	}
	s.grpc = newGRPCServer("client-grpc", s.server.GRPCAddr, logger, opts, func(srv *grpc.Server) {
		meta.Register(srv)
		services.Register(srv)
	})
	page := status.New(status.Sources{
		Self: func() status.Node {
			return status.Node{Name: "standalone", Roles: "standalone", GRPCAddr: s.ClientAddr(),
				HTTPAddr: s.HTTPBoundAddr(), Health: readiness(s.http), Self: true}
		},
		Writes: promReg,
	})
	gw := s.server.newGateway(logger, api, s.ClientAddr)
	s.http = newHTTPServer(httpConfig{Addr: s.HTTPAddr, Pprof: s.Pprof, Status: page, API: gw, TLS: api.HTTP}, logger, promReg)
	return []run.Component{
		s.http,
		page,
		reg,
		store,
		&funcComponent{
			name:  "bus",
			start: func(context.Context) error { return listeners.Subscribe(q, store.Listeners()) },
			stop: func(ctx context.Context) error {
				ctx, cancel := withDefaultTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := q.Stop(ctx); err != nil {
					return fmt.Errorf("bus: %w", err)
				}
				return nil
			},
		},
		newSchemaWatch(reg, cache, roleMetrics.RegistryEvents),
		&retention{store: store, ttls: cache.TTLs, logger: logger},
		s.grpc,
		gw,
		readyMarker{s.http},
	}, nil
}
