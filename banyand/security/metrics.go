package security

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/banyand-io/banyand/pkg/auth"
	"github.com/banyand-io/banyand/pkg/tlsutil"
)

// Metrics exports a role's TLS certificates, failed handshakes and
// client API authentication, each series labelled with the certificate's
// use (client-api, cluster-server, cluster-client). Sources are added
// while the role's components are built, whether or not the collector is
// registered yet; a role with TLS off exports no series.
type Metrics struct {
	clientAPI bool // liaison and standalone: also the auth metrics

	mu         sync.Mutex
	certs      map[string]func() tlsutil.Stats
	handshakes map[string]func() int64
	auth       func() auth.Stats
}

var (
	certExpiryDesc = prometheus.NewDesc("banyand_tls_certificate_expiry_timestamp_seconds",
		"When the certificate in use expires (Unix seconds); it rises when a renewed certificate is picked up.", []string{"use"}, nil)
	certReloadsDesc = prometheus.NewDesc("banyand_tls_certificate_reloads_total",
		"Renewed certificate files picked up without restart.", []string{"use"}, nil)
	certReloadFailuresDesc = prometheus.NewDesc("banyand_tls_certificate_reload_failures_total",
		"Changed certificate files refused (unreadable, mismatched or expired); the previous certificate stayed in use.", []string{"use"}, nil)
	handshakeFailuresDesc = prometheus.NewDesc("banyand_tls_handshake_failures_total",
		"TLS handshakes that failed: the peer does not trust this certificate, or presented none or an untrusted one.", []string{"use"}, nil)
	authUnauthenticatedDesc = prometheus.NewDesc("banyand_auth_unauthenticated_total",
		"Client API calls refused for missing or invalid credentials.", nil, nil)
	authDeniedDesc = prometheus.NewDesc("banyand_auth_permission_denied_total",
		"Client API calls refused because the credentials lack the scope.", nil, nil)
	authReloadsDesc = prometheus.NewDesc("banyand_auth_file_reloads_total",
		"Changed auth files applied.", nil, nil)
	authReloadFailuresDesc = prometheus.NewDesc("banyand_auth_file_reload_failures_total",
		"Changed auth files refused; the previous credentials stayed in force.", nil, nil)
)

// NewMetrics is a role's security metrics; clientAPI (liaison and
// standalone) adds the auth metrics.
func NewMetrics(clientAPI bool) *Metrics {
	return &Metrics{clientAPI: clientAPI, certs: map[string]func() tlsutil.Stats{}, handshakes: map[string]func() int64{}}
}

// AddCert exports the expiry and reloads of a certificate in use.
func (m *Metrics) AddCert(use string, stats func() tlsutil.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.certs[use] = stats
}

// AddHandshakes exports the failed TLS handshakes of a server.
func (m *Metrics) AddHandshakes(use string, count func() int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handshakes[use] = count
}

// SetAuth exports the client API authentication counts.
func (m *Metrics) SetAuth(stats func() auth.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.auth = stats
}

func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- certExpiryDesc
	ch <- certReloadsDesc
	ch <- certReloadFailuresDesc
	ch <- handshakeFailuresDesc
	if m.clientAPI {
		ch <- authUnauthenticatedDesc
		ch <- authDeniedDesc
		ch <- authReloadsDesc
		ch <- authReloadFailuresDesc
	}
}

func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for use, stats := range m.certs {
		s := stats()
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(s.NotAfter.Unix()), use)
		ch <- prometheus.MustNewConstMetric(certReloadsDesc, prometheus.CounterValue, float64(s.Reloads), use)
		ch <- prometheus.MustNewConstMetric(certReloadFailuresDesc, prometheus.CounterValue, float64(s.Failures), use)
	}
	for use, count := range m.handshakes {
		ch <- prometheus.MustNewConstMetric(handshakeFailuresDesc, prometheus.CounterValue, float64(count()), use)
	}
	if m.auth != nil {
		s := m.auth()
		ch <- prometheus.MustNewConstMetric(authUnauthenticatedDesc, prometheus.CounterValue, float64(s.Unauthenticated))
		ch <- prometheus.MustNewConstMetric(authDeniedDesc, prometheus.CounterValue, float64(s.Denied))
		ch <- prometheus.MustNewConstMetric(authReloadsDesc, prometheus.CounterValue, float64(s.Reloads))
		ch <- prometheus.MustNewConstMetric(authReloadFailuresDesc, prometheus.CounterValue, float64(s.ReloadFailures))
	}
}
