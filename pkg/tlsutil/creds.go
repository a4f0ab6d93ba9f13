package tlsutil

import (
	"crypto/tls"
	"net"

	"google.golang.org/grpc/credentials"
)

// ServerCredentials are gRPC TLS server credentials that report every
// failed handshake to onFailure (a client that does not trust the
// certificate, or presents none or a wrong one), which gRPC itself only
// logs through grpclog.
func ServerCredentials(cfg *tls.Config, onFailure func(remote net.Addr, err error)) credentials.TransportCredentials {
	return &reportingCreds{TransportCredentials: credentials.NewTLS(cfg), onFailure: onFailure}
}

type reportingCreds struct {
	credentials.TransportCredentials
	onFailure func(net.Addr, error)
}

func (c *reportingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil && c.onFailure != nil {
		c.onFailure(conn.RemoteAddr(), err)
	}
	return out, info, err
}

func (c *reportingCreds) Clone() credentials.TransportCredentials {
	return &reportingCreds{TransportCredentials: c.TransportCredentials.Clone(), onFailure: c.onFailure}
}
