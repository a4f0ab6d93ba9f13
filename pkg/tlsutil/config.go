package tlsutil

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// LoadCAPool reads a PEM file of CA certificates.
func LoadCAPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("tlsutil: CA file %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// ServerConfig is a server's TLS configuration serving r's certificate.
// With clientCAs set, clients must present a certificate signed by one of
// them (mutual TLS).
func ServerConfig(r *Reloader, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{
		GetCertificate: r.GetCertificate,
		MinVersion:     tls.VersionTLS12,
	}
	if clientCAs != nil {
		c.ClientCAs = clientCAs
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c
}

// ClientConfig is a client's TLS configuration: it verifies servers with
// rootCAs (nil: the system's), presents r's certificate when r is not nil
// and checks the server's name against serverName when it is not empty
// (instead of the dialled host).
func ClientConfig(rootCAs *x509.CertPool, r *Reloader, serverName string) *tls.Config {
	c := &tls.Config{
		RootCAs:    rootCAs,
		ServerName: serverName,
		MinVersion: tls.VersionTLS12,
	}
	if r != nil {
		c.GetClientCertificate = r.GetClientCertificate
	}
	return c
}

// PinnedClientConfig is a client's TLS configuration that accepts exactly
// the certificate r serves now (it may be renewed between handshakes), for
// a process dialling its own server, which no configured CA may vouch for.
// Presenting the certificate takes its private key, so the pin is as strong
// as a CA's signature.
func PinnedClientConfig(r *Reloader) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is checked by VerifyConnection against the pin instead.
		InsecureSkipVerify: true, //nolint:gosec // verified by the pin below
		VerifyConnection: func(cs tls.ConnectionState) error {
			cur := r.Current()
			if len(cs.PeerCertificates) == 0 || cur == nil || len(cur.Certificate) == 0 ||
				!bytes.Equal(cs.PeerCertificates[0].Raw, cur.Certificate[0]) {
				return errors.New("tls: the server's certificate is not this process's own")
			}
			return nil
		},
	}
}
