package metrics

//go:generate go run ../../scripts/gen-metrics-doc -o ../../docs/operation/metrics.md

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/banyand/handoff"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/auth"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/tlsutil"
)

// Info describes one metric family a role serves on /metrics.
type Info struct {
	Name, Type, Help string
	Labels           []string // sorted
	Roles            []string // in the order of RoleNames
}

// RoleNames are the roles Catalog covers, in the order it lists them.
var RoleNames = []string{"liaison", "storage", "standalone"}

// Catalog is every banyand metric of every role, sorted by name: each
// role's registration function runs against a fresh registry with
// placeholder sources, every labelled metric gets one series, and the
// registry is gathered. The Go runtime and process collectors every role
// also registers are left out. docs/operation/metrics.md is generated from
// it, so the reference cannot drift from the code.
func Catalog() ([]Info, error) {
	byName := map[string]*Info{}
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
				info = &Info{Name: mf.GetName(), Help: mf.GetHelp(), Type: strings.ToLower(mf.GetType().String())}
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
	out := make([]Info, 0, len(byName))
	for _, info := range byName {
		slices.Sort(info.Labels)
		out = append(out, *info)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// catalogRole registers role's metrics on reg with placeholder sources and
// gives every labelled metric one series, so gathering finds them all.
func catalogRole(reg prometheus.Registerer, role string) {
	cache := noSchemaStats{}
	var m Role
	switch role {
	case "liaison":
		batches := NewPublisherObserver()
		batches.BatchAcked("", 0)
		m = RegisterLiaison(reg, LiaisonSources{
			PubStats:  func() pub.Stats { return pub.Stats{Nodes: []pub.NodeStats{{}}} },
			PubBatch:  batches,
			Schema:    noSchemaStats{},
			Cache:     cache,
			NodeWatch: func() etcd.NodeWatcherStats { return etcd.NodeWatcherStats{} },
			Security:  catalogSecurity(true),
		})
	case "storage":
		m = RegisterStorage(reg, StorageSources{
			Schema: noSchemaStats{}, Cache: cache,
			Registrar: func() etcd.NodeRegistrarStats { return etcd.NodeRegistrarStats{} },
			Security:  catalogSecurity(false),
			Engine:    catalogEngine,
			Handoff:   func() handoff.Stats { return handoff.Stats{} },
		})
	case "standalone":
		m = RegisterStandalone(reg, StandaloneSources{
			Schema: noSchemaStats{}, Cache: cache, Security: catalogSecurity(true), Engine: catalogEngine,
		})
	}
	if m.Writes != nil {
		m.Writes.received.WithLabelValues("", "")
		m.Writes.answered.WithLabelValues("", "", "")
	}
	if m.Listeners != nil {
		m.Listeners.wrap(queue.TopicStreamWrite, nil)
		m.Listeners.failures.WithLabelValues("", "")
	}
	if m.GRPC != nil {
		m.GRPC.InitializeMetrics(oneMethod{})
	}
	if m.RegistryEvents != nil {
		m.RegistryEvents.WithLabelValues("", "")
	}
}

// catalogSecurity is a role's security metrics with TLS and auth on.
func catalogSecurity(clientAPI bool) *security.Metrics {
	m := security.NewMetrics(clientAPI)
	m.AddCert("", func() tlsutil.Stats { return tlsutil.Stats{} })
	m.AddHandshakes("", func() int64 { return 0 })
	if clientAPI {
		m.SetAuth(func() auth.Stats { return auth.Stats{} })
	}
	return m
}

// catalogEngine is an open store's engine stats, so its metrics are listed.
func catalogEngine() (tsdb.EngineStats, bool) { return tsdb.EngineStats{}, true }

type noSchemaStats struct{}

func (noSchemaStats) Resyncs() uint64 { return 0 }
func (noSchemaStats) Skipped() uint64 { return 0 }

func (noSchemaStats) Size() (groups, streams, measures int) { return 0, 0, 0 }

// oneMethod is a gRPC server with one method, for the gRPC metrics'
// pre-registration.
type oneMethod struct{}

func (oneMethod) GetServiceInfo() map[string]grpc.ServiceInfo {
	return map[string]grpc.ServiceInfo{"service": {Methods: []grpc.MethodInfo{{Name: "method"}}}}
}
