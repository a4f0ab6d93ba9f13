// Package gateway serves BanyanDB's HTTP API: the grpc-gateway handlers
// generated from the google.api.http options of the client protos, under
// /api on a role's HTTP port, so bydbctl and HTTP tools work against
// banyand as they do against BanyanDB.
//
// Every call goes to the role's own client gRPC server over one loopback
// connection, through the same interceptors as any gRPC client: metrics,
// limits and authentication see an HTTP call as the gRPC call it becomes.
// The caller's credentials travel with it (the Authorization header, and
// BanyanDB's username and password as Grpc-Metadata-Username and
// Grpc-Metadata-Password), so a call without them gets 401 and one
// without the method's scope 403, with grpc-gateway's JSON error body.
package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
)

// Prefix is where the API is mounted on the HTTP port, as in BanyanDB.
const Prefix = "/api"

// maxResponseBytes bounds one answer the gateway takes from the gRPC
// server (a query's); the server holds the whole answer in memory anyway.
const maxResponseBytes = 256 << 20

// healthTimeout bounds GET /api/healthz, as BanyanDB's does.
const healthTimeout = 5 * time.Second

// Config is the gateway's configuration.
type Config struct {
	// MaxBodyBytes bounds a request body: a larger one is refused with
	// 413 before it is decoded. The roles set it to --max-recv-msg-size.
	MaxBodyBytes int64
	// TLS, when not nil, is how the gateway dials the gRPC server (which
	// then serves TLS); nil dials in plaintext.
	TLS *tls.Config
}

// Deps are the gateway's dependencies.
type Deps struct {
	Logger *slog.Logger
	// Target is the gRPC server's bound address, asked at Start (the
	// server binds before the gateway starts; tests bind port 0).
	Target func() string
}

// Gateway is the /api handler and, as a run component, the loopback
// connection behind it. Before Start and after Stop it answers 503.
type Gateway struct {
	cfg  Config
	deps Deps
	// errors writes the gateway's own errors (503, 413, 415) as the
	// generated handlers write theirs.
	errors *runtime.ServeMux

	// serving is the API while the connection is open; nil otherwise.
	serving atomic.Pointer[api]

	mu   sync.Mutex // guards conn
	conn *grpc.ClientConn
}

// api is what one open connection serves.
type api struct {
	mux    *runtime.ServeMux
	health healthpb.HealthClient
}

// New allocates a gateway; Start connects it.
func New(cfg Config, deps Deps) *Gateway {
	return &Gateway{cfg: cfg, deps: deps, errors: newMux()}
}

func (g *Gateway) Name() string { return "http-gateway" }

// Start opens the loopback connection (lazily: it connects on the first
// call) and registers every service's routes on it.
func (g *Gateway) Start(ctx context.Context) error {
	target := loopback(g.deps.Target())
	creds := insecure.NewCredentials()
	if g.cfg.TLS != nil {
		creds = credentials.NewTLS(g.cfg.TLS)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResponseBytes)),
	)
	if err != nil {
		return fmt.Errorf("http gateway: dial the client gRPC server at %s: %w", target, err)
	}
	mux := newMux()
	for _, register := range registrations() {
		// With a connection the registration only stores handlers; ctx is
		// not kept by them.
		if err := register(ctx, mux, conn); err != nil {
			_ = conn.Close()
			return fmt.Errorf("http gateway: %w", err)
		}
	}
	g.mu.Lock()
	g.conn = conn
	g.mu.Unlock()
	g.serving.Store(&api{mux: mux, health: healthpb.NewHealthClient(conn)})
	g.deps.Logger.Info("HTTP API serving", "prefix", Prefix, "grpc", target, "tls", g.cfg.TLS != nil)
	return nil
}

// Stop refuses new calls with 503 and closes the connection, which ends
// the calls still running (CANCELED, HTTP 499). The role stops the gateway
// before its gRPC server, whose drain then sees no HTTP call.
func (g *Gateway) Stop(context.Context) error {
	g.serving.Store(nil)
	g.mu.Lock()
	conn := g.conn
	g.conn = nil
	g.mu.Unlock()
	if conn == nil {
		return nil
	}
	return conn.Close()
}

// registrations are the services on the gateway: every client service
// with HTTP routes.
func registrations() []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error {
	return []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
		commonv1.RegisterServiceHandler,
		databasev1.RegisterGroupRegistryServiceHandler,
		databasev1.RegisterStreamRegistryServiceHandler,
		databasev1.RegisterMeasureRegistryServiceHandler,
		databasev1.RegisterTraceRegistryServiceHandler,
		databasev1.RegisterPropertyRegistryServiceHandler,
		databasev1.RegisterIndexRuleRegistryServiceHandler,
		databasev1.RegisterIndexRuleBindingRegistryServiceHandler,
		databasev1.RegisterTopNAggregationRegistryServiceHandler,
		streamv1.RegisterStreamServiceHandler,
		measurev1.RegisterMeasureServiceHandler,
		propertyv1.RegisterPropertyServiceHandler,
		tracev1.RegisterTraceServiceHandler,
	}
}

// newMux is grpc-gateway's mux as BanyanDB configures it: the default
// marshaler (protojson with lowerCamelCase names, enum names, unpopulated
// fields written, unknown fields and enum names ignored on input) and
// error handler. One change: a known path called with the wrong method
// answers 405, where grpc-gateway answers 501 for it (with the same body).
func newMux() *runtime.ServeMux {
	return runtime.NewServeMux(runtime.WithRoutingErrorHandler(routingError))
}

func routingError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if httpStatus == http.StatusMethodNotAllowed {
		runtime.HTTPError(ctx, mux, m, w, r, &runtime.HTTPStatusError{
			HTTPStatus: httpStatus, Err: status.Error(codes.Unimplemented, http.StatusText(httpStatus)),
		})
		return
	}
	runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, httpStatus)
}

// ServeHTTP serves requests under Prefix.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := g.serving.Load()
	if a == nil {
		g.writeError(w, r, http.StatusServiceUnavailable, codes.Unavailable, "the HTTP API is not serving: the server is starting or stopping")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, Prefix)
	if path == "/healthz" {
		a.healthz(w, r)
		return
	}
	if err := g.checkBody(r); err != nil {
		var he *runtime.HTTPStatusError
		if errors.As(err, &he) {
			g.writeError(w, r, he.HTTPStatus, status.Code(he.Err), status.Convert(he.Err).Message())
			return
		}
		g.writeError(w, r, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	}
	http.StripPrefix(Prefix, a.mux).ServeHTTP(w, r)
}

// healthz answers as BanyanDB's gateway does: the gRPC health status as
// plain text with 200 ("SERVING", or "NOT_SERVING" while starting or
// draining), 503 when the check itself fails. It needs no credentials.
func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	resp, err := a.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		http.Error(w, "gRPC health check failed: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, resp.GetStatus().String())
}

// checkBody refuses, before decoding, a body of a type the API does not
// read and one larger than MaxBodyBytes; a body within the bound is read
// whole, so a client that stops sending cannot hold a gRPC call open.
func (g *Gateway) checkBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	tooLarge := &runtime.HTTPStatusError{
		HTTPStatus: http.StatusRequestEntityTooLarge,
		Err:        status.Errorf(codes.ResourceExhausted, "request body larger than %d bytes", g.cfg.MaxBodyBytes),
	}
	if r.ContentLength > g.cfg.MaxBodyBytes {
		return tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, g.cfg.MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("reading the request body: %w", err)
	}
	if int64(len(body)) > g.cfg.MaxBodyBytes {
		return tooLarge
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return nil
}

// checkContentType accepts JSON, a missing type, and text/plain, which is
// what bydbctl sends with its JSON bodies (its HTTP client guesses the type
// from the bytes).
func checkContentType(v string) error {
	if v == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(v)
	if err == nil && (mt == "application/json" || mt == "text/plain" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return &runtime.HTTPStatusError{
		HTTPStatus: http.StatusUnsupportedMediaType,
		Err:        status.Errorf(codes.InvalidArgument, "unsupported Content-Type %q: send application/json", v),
	}
}

// writeError writes an error as grpc-gateway does: the gRPC status as JSON
// ({"code", "message", "details"}), here with an HTTP status of the
// gateway's choosing.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, httpStatus int, code codes.Code, msg string) {
	// The error is JSON whatever the request's Content-Type said.
	plain := r.Clone(r.Context())
	plain.Header.Del("Content-Type")
	_, out := runtime.MarshalerForRequest(g.errors, plain)
	runtime.HTTPError(r.Context(), g.errors, out, w, r, &runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: status.Error(code, msg)})
}

// loopback turns a bound address into one to dial: an unspecified host
// (0.0.0.0, ::) is this machine's loopback.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if ip != nil && ip.To4() == nil {
			return net.JoinHostPort("::1", port)
		}
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}
