// Package roles wires banyand's components into the three roles the
// command line runs: liaison, storage and standalone.
package roles

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/banyand-io/banyand/banyand/gateway"
	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/metrics"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/pkg/grpclimit"
	"github.com/banyand-io/banyand/pkg/wire"
)

// Defaults shared by the roles. The client port is BanyanDB's, so clients
// configured for BanyanDB find banyand where they expect it.
const (
	DefaultClientAddr  = "127.0.0.1:17912"
	DefaultClusterAddr = "127.0.0.1:17914"
	DefaultDataPath    = "data"
	DefaultMaxRecvSize = 16 << 20
	// DefaultMaxStreams bounds the streaming calls open over all client
	// connections; DefaultMaxStreamsPerConn those of one connection (a
	// SkyWalking OAP holds 15 write streams and its queries on one).
	DefaultMaxStreams        = 10000
	DefaultMaxStreamsPerConn = 1000
)

// serverFlags are the client-facing gRPC settings of liaison and standalone.
type serverFlags struct {
	GRPCAddr          string
	MaxRecvMsgSize    int
	MaxStreams        int
	MaxStreamsPerConn int
	AckTimeout        time.Duration
	Security          security.ClientSecurity
}

func (c *serverFlags) register(fs *pflag.FlagSet, defaultAddr string) {
	fs.StringVar(&c.GRPCAddr, "grpc-addr", defaultAddr, "host:port of the BanyanDB-compatible client gRPC API")
	fs.IntVar(&c.MaxRecvMsgSize, "max-recv-msg-size", DefaultMaxRecvSize, "largest gRPC message accepted from a client, in bytes; larger ones are refused with RESOURCE_EXHAUSTED")
	fs.IntVar(&c.MaxStreams, "max-streams", DefaultMaxStreams, "streaming calls (write streams) open at once over all client connections; more are refused with RESOURCE_EXHAUSTED")
	fs.IntVar(&c.MaxStreamsPerConn, "max-streams-per-connection", DefaultMaxStreamsPerConn, "calls one client connection may have open at once (HTTP/2 max concurrent streams); more wait for one to end")
	fs.DurationVar(&c.AckTimeout, "ack-timeout", liaison.DefaultAckTimeout, "how long one write may wait for its data node's ack before the client gets an error status")
	c.Security.RegisterFlags(fs)
}

func (c *serverFlags) validate() error {
	var errs []error
	if err := checkAddr("--grpc-addr", c.GRPCAddr); err != nil {
		errs = append(errs, err)
	}
	if c.MaxRecvMsgSize < 1024 {
		errs = append(errs, fmt.Errorf("--max-recv-msg-size %d: must be at least 1024 bytes", c.MaxRecvMsgSize))
	}
	if c.MaxStreams < 1 {
		errs = append(errs, fmt.Errorf("--max-streams %d: must be at least 1", c.MaxStreams))
	}
	if c.MaxStreamsPerConn < 1 {
		errs = append(errs, fmt.Errorf("--max-streams-per-connection %d: must be at least 1", c.MaxStreamsPerConn))
	}
	if c.AckTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--ack-timeout %s: must be positive", c.AckTimeout))
	}
	errs = append(errs, c.Security.Validate())
	return errors.Join(errs...)
}

// clientServerOptions are the gRPC options of the client-facing server, in
// the order its interceptors run: metrics (so refusals are counted), the
// stream limit, then authentication; and the TLS configurations of the
// HTTP port and of its gateway's loopback connection (api.GRPC is nil).
func (c *serverFlags) clientServerOptions(logger *slog.Logger, grpcMetrics *grpcprom.ServerMetrics, sec *security.Metrics) ([]grpc.ServerOption, security.ClientAPI, error) {
	opts := []grpc.ServerOption{
		// The write path receives and answers at the wire level.
		grpc.ForceServerCodecV2(wire.Codec()),
		grpc.MaxRecvMsgSize(c.MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(uint32(c.MaxStreamsPerConn)),
		// Write streams are long-lived; keepalive lets dead clients go.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.InitialWindowSize(4 << 20),
		grpc.InitialConnWindowSize(8 << 20),
	}
	opts = append(opts, metrics.GRPCServerOptions(grpcMetrics)...)
	opts = append(opts, grpc.ChainStreamInterceptor(grpclimit.NewStreams(c.MaxStreams).Interceptor()))
	api, err := c.Security.ServerOptions(logger, sec)
	if err != nil {
		return nil, security.ClientAPI{}, err
	}
	opts = append(opts, api.GRPC...)
	api.GRPC = nil
	return opts, api, nil
}

// newGateway is the HTTP API of a role's client gRPC server, which it
// dials at target once that is bound.
func (c *serverFlags) newGateway(logger *slog.Logger, api security.ClientAPI, target func() string) *gateway.Gateway {
	return gateway.New(gateway.Config{MaxBodyBytes: int64(c.MaxRecvMsgSize), TLS: api.Loopback},
		gateway.Deps{Logger: logger.With("component", "http-gateway"), Target: target})
}

func checkAddr(flag, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s %q: want host:port: %w", flag, addr, err)
	}
	return nil
}

func registryDir(dataPath string) string { return filepath.Join(dataPath, "registry") }
func storageDir(dataPath string) string  { return filepath.Join(dataPath, "storage") }

// SetMaxStreams overrides --max-streams (tests).
func (l *Liaison) SetMaxStreams(n int) { l.server.MaxStreams = n }

// SetClientSecurity overrides the client API's TLS and auth flags (tests).
func (l *Liaison) SetClientSecurity(c security.ClientSecurity) { l.server.Security = c }

// SetClientSecurity overrides the client API's TLS and auth flags (tests).
func (s *Standalone) SetClientSecurity(c security.ClientSecurity) { s.server.Security = c }
