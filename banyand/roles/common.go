// Package roles wires banyand's components into the three roles the
// command line runs: liaison, storage and standalone.
package roles

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/banyand-io/banyand/banyand/liaison"
	"github.com/banyand-io/banyand/banyand/security"
	"github.com/banyand-io/banyand/pkg/wire"
)

// Defaults shared by the roles. The client port is BanyanDB's, so clients
// configured for BanyanDB find banyand where they expect it.
const (
	DefaultClientAddr  = "127.0.0.1:17912"
	DefaultClusterAddr = "127.0.0.1:17914"
	DefaultDataPath    = "data"
	DefaultMaxRecvSize = 16 << 20
)

// serverFlags are the client-facing gRPC settings of liaison and standalone.
type serverFlags struct {
	GRPCAddr       string
	MaxRecvMsgSize int
	AckTimeout     time.Duration
	Security       security.ClientSecurity
}

func (c *serverFlags) register(fs *pflag.FlagSet, defaultAddr string) {
	fs.StringVar(&c.GRPCAddr, "grpc-addr", defaultAddr, "host:port of the BanyanDB-compatible client gRPC API")
	fs.IntVar(&c.MaxRecvMsgSize, "max-recv-msg-size", DefaultMaxRecvSize, "largest gRPC message accepted from a client, in bytes; larger ones are refused with RESOURCE_EXHAUSTED")
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
	if c.AckTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--ack-timeout %s: must be positive", c.AckTimeout))
	}
	errs = append(errs, c.Security.Validate())
	return errors.Join(errs...)
}

// clientServerOptions are the gRPC options of the client-facing server.
func (c *serverFlags) clientServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		// The write path receives and answers at the wire level.
		grpc.ForceServerCodecV2(wire.Codec()),
		grpc.MaxRecvMsgSize(c.MaxRecvMsgSize),
		// Write streams are long-lived; keepalive lets dead clients go.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.InitialWindowSize(4 << 20),
		grpc.InitialConnWindowSize(8 << 20),
	}
}

func checkAddr(flag, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s %q: want host:port: %w", flag, addr, err)
	}
	return nil
}

func registryDir(dataPath string) string { return filepath.Join(dataPath, "registry") }
func storageDir(dataPath string) string  { return filepath.Join(dataPath, "storage") }

// SetClientSecurity overrides the client API's TLS and auth flags (tests).
func (l *Liaison) SetClientSecurity(c security.ClientSecurity) { l.server.Security = c }

// SetClientSecurity overrides the client API's TLS and auth flags (tests).
func (s *Standalone) SetClientSecurity(c security.ClientSecurity) { s.server.Security = c }
