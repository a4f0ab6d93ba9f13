package roles

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
)

// httpServer serves the operator endpoints of a role:
//
//	/healthz  200 while the process runs
//	/readyz   200 once every component started, 503 before and while stopping
//	/metrics  Prometheus metrics
//	/, /status  the status page, on roles that have one
//	/api/     BanyanDB's HTTP API, on liaison and standalone (banyand/gateway)
//	/debug/pprof/  Go's profiles, with --pprof only (no auth: trusted networks)
//
// With a TLS configuration (liaison and standalone with --tls) every
// endpoint is served over TLS, with the client API's certificate.
//
// It is the first component to start and the last to stop, so probes see the
// whole life of the role; readiness is flipped by readyMarker.
type httpServer struct {
	cfg    httpConfig
	logger *slog.Logger
	ready  atomic.Bool
	reg    *prometheus.Registry

	mu  sync.Mutex
	lis net.Listener
	srv *http.Server
}

// registerPprofFlag registers --pprof, which every role has.
func registerPprofFlag(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "pprof", false, "also serve Go's profiles on --http-addr at /debug/pprof/ (unauthenticated: trusted networks only)")
}

// httpConfig is what a role's HTTP port serves besides health and metrics.
type httpConfig struct {
	Addr   string       // host:port; empty disables the server
	Pprof  bool         // serve /debug/pprof/
	Status http.Handler // the status page on / and /status; nil: none
	API    http.Handler // BanyanDB's HTTP API under /api/; nil: none
	TLS    *tls.Config  // serve TLS; nil: plaintext
}

// newHTTPServer serves reg on /metrics and what cfg names.
func newHTTPServer(cfg httpConfig, logger *slog.Logger, reg *prometheus.Registry) *httpServer {
	return &httpServer{cfg: cfg, logger: logger, reg: reg}
}

func (h *httpServer) Name() string { return "http" }

func (h *httpServer) Start(context.Context) error {
	if h.cfg.Addr == "" {
		return nil
	}
	lis, err := net.Listen("tcp", h.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", h.cfg.Addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !h.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{}))
	endpoints := "/healthz /readyz /metrics"
	if h.cfg.Status != nil {
		mux.Handle("GET /{$}", h.cfg.Status)
		mux.Handle("GET /status", h.cfg.Status)
		endpoints += " /status"
	}
	if h.cfg.API != nil {
		mux.Handle("/api/", h.cfg.API)
		endpoints += " /api/"
	}
	if h.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		endpoints += " /debug/pprof/"
	}
	h.mu.Lock()
	h.lis = lis
	// No WriteTimeout: /debug/pprof/profile and /trace answer after their
	// ?seconds= have passed. ReadTimeout bounds how long a client may take
	// to send an /api request body (read whole before it is decoded).
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, TLSConfig: h.cfg.TLS,
		ErrorLog: slog.NewLogLogger(h.logger.Handler(), slog.LevelWarn)}
	h.mu.Unlock()
	go func() {
		var err error
		if h.cfg.TLS != nil {
			err = h.srv.ServeTLS(lis, "", "") // the certificate comes from TLSConfig
		} else {
			err = h.srv.Serve(lis)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.logger.Error("http server failed", "error", err)
		}
	}()
	h.logger.Info("HTTP server listening", "addr", lis.Addr().String(), "endpoints", endpoints, "tls", h.cfg.TLS != nil)
	return nil
}

// Addr is the bound address; empty before Start or when disabled.
func (h *httpServer) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lis == nil {
		return ""
	}
	return h.lis.Addr().String()
}

func (h *httpServer) Stop(ctx context.Context) error {
	h.mu.Lock()
	srv := h.srv
	h.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// readyMarker is the last component of a role: once it starts, everything
// before it has, and it is the first to stop, so /readyz drops at once.
type readyMarker struct{ h *httpServer }

func (r readyMarker) Name() string { return "ready" }

func (r readyMarker) Start(context.Context) error {
	r.h.ready.Store(true)
	return nil
}

func (r readyMarker) Stop(context.Context) error {
	r.h.ready.Store(false)
	return nil
}

// readiness is a role's self-reported health on the status page.
func readiness(h *httpServer) string {
	if h != nil && h.ready.Load() {
		return "ready"
	}
	return "starting"
}
