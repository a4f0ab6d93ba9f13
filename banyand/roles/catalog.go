package roles

//go:generate go run ../../scripts/gen-metrics-doc -o ../../docs/operation/metrics.md

import (
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/auth"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/tlsutil"
)

// MetricInfo describes one metric family a role serves on /metrics.
type MetricInfo struct {
	Name, Type, Help string
	Labels           []string // sorted
	Roles            []string // in the order of RoleNames
}

// RoleNames are the roles MetricCatalog covers, in the order it lists them.
var RoleNames = []string{"liaison", "storage", "standalone"}

// MetricCatalog is every banyand metric of every role, sorted by name: each
// role's registration function runs against a fresh registry with
// placeholder sources, every labelled metric gets one series, and the
// registry is gathered. The Go runtime and process collectors every role
// also registers are left out. docs/operation/metrics.md is generated from
// it, so the reference cannot drift from the code.
func MetricCatalog() ([]MetricInfo, error) {
	byName := map[string]*MetricInfo{}
	for _, role := range RoleNames {
		reg := prometheus.NewRegistry()
		catalogRole(reg, role)
		mfs, err := reg.Gather()
		if err != nil {
			return nil, err
		}
		for _, mf := range mfs {
			info := byName[mf.GetName()]
			if info == nil {
				info = &MetricInfo{Name: mf.GetName(), Help: mf.GetHelp(), Type: strings.ToLower(mf.GetType().String())}
				byName[mf.GetName()] = info
			}
			info.Roles = append(info.Roles, role)
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if !slices.Contains(info.Labels, l.GetName()) {
						info.Labels = append(info.Labels, l.GetName())
					}
				}
			}
		}
	}
	out := make([]MetricInfo, 0, len(byName))
	for _, info := range byName {
		slices.Sort(info.Labels)
		out = append(out, *info)
	}
	slices.SortFunc(out, func(a, b MetricInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// catalogRole registers role's metrics on reg with placeholder sources and
// gives every labelled metric one series, so gathering finds them all.
func catalogRole(reg prometheus.Registerer, role string) {
	cache := liaison.NewSchemaCache(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	var m roleMetrics
	switch role {
	case "liaison":
		batches := newPublisherObserver()
		batches.BatchAcked("", 0)
		m = registerLiaisonMetrics(reg, liaisonSources{
			pubStats:  func() pub.Stats { return pub.Stats{Nodes: []pub.NodeStats{{}}} },
			pubBatch:  batches,
			schema:    noSchemaStats{},
			cache:     cache,
			nodeWatch: func() etcd.NodeWatcherStats { return etcd.NodeWatcherStats{} },
			security:  catalogSecurity(true),
		})
	case "storage":
		m = registerStorageMetrics(reg, storageSources{
			schema: noSchemaStats{}, cache: cache,
			registrar: func() etcd.NodeRegistrarStats { return etcd.NodeRegistrarStats{} },
			security:  catalogSecurity(false),
			engine:    catalogEngine,
		})
	case "standalone":
		m = registerStandaloneMetrics(reg, standaloneSources{
			schema: noSchemaStats{}, cache: cache, security: catalogSecurity(true), engine: catalogEngine,
		})
	}
	if m.writes != nil {
		m.writes.received.WithLabelValues("", "")
		m.writes.answered.WithLabelValues("", "", "")
	}
	if m.listeners != nil {
		m.listeners.wrap(queue.TopicStreamWrite, nil)
		m.listeners.failures.WithLabelValues("", "")
	}
	if m.grpc != nil {
		m.grpc.InitializeMetrics(oneMethod{})
	}
	if m.registryEvents != nil {
		m.registryEvents.WithLabelValues("", "")
	}
}

// catalogSecurity is a role's security metrics with TLS and auth on.
func catalogSecurity(clientAPI bool) *securityMetrics {
	m := newSecurityMetrics(clientAPI)
	m.addCert("", func() tlsutil.Stats { return tlsutil.Stats{} })
	m.addHandshakes("", func() int64 { return 0 })
	if clientAPI {
		m.setAuth(func() auth.Stats { return auth.Stats{} })
	}
	return m
}

// catalogEngine is an open store's engine stats, so its metrics are listed.
func catalogEngine() (tsdb.EngineStats, bool) { return tsdb.EngineStats{}, true }

type noSchemaStats struct{}

func (noSchemaStats) Resyncs() uint64 { return 0 }
func (noSchemaStats) Skipped() uint64 { return 0 }

// oneMethod is a gRPC server with one method, for the gRPC metrics'
// pre-registration.
type oneMethod struct{}

func (oneMethod) GetServiceInfo() map[string]grpc.ServiceInfo {
	return map[string]grpc.ServiceInfo{"service": {Methods: []grpc.MethodInfo{{Name: "method"}}}}
}
