// Package tlsutil builds TLS configurations from PEM files and keeps a
// certificate current while its files are renewed in place.
package tlsutil

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCheckInterval is how often a Reloader looks at its files.
const DefaultCheckInterval = time.Second

// ReloaderConfig names a certificate and key pair.
type ReloaderConfig struct {
	// CertFile and KeyFile are PEM files; CertFile may hold the chain.
	CertFile, KeyFile string
	// CheckInterval is the least time between two looks at the files, so a
	// handshake costs at most two stats per interval. Default 1s.
	CheckInterval time.Duration
}

// Stats are a Reloader's counters and the certificate it serves.
type Stats struct {
	Reloads  int64     // renewed pairs picked up
	Failures int64     // changed pairs refused (the old one stayed)
	NotAfter time.Time // expiry of the certificate served
}

// Reloader serves a certificate and key pair from files and picks up a
// renewed pair on the first handshake after the files changed (by size,
// modification time or content). A changed pair that does not load, for
// example a key not yet written, is refused with an error log and the old
// certificate is kept; it is tried again when the files change again.
//
// Handshakes read the current certificate from an atomic pointer; the
// check of the files runs under mu, at most once per CheckInterval.
type Reloader struct {
	cfg    ReloaderConfig
	logger *slog.Logger

	cert     atomic.Pointer[tls.Certificate]
	reloads  atomic.Int64
	failures atomic.Int64

	mu        sync.Mutex
	lastCheck time.Time
	stamp     stamp  // files as of the last check
	certPEM   []byte // content of the pair being served
	keyPEM    []byte
}

// stamp identifies a version of the two files without reading them.
type stamp struct {
	certSize, keySize int64
	certMod, keyMod   time.Time
}

// NewReloader loads the pair once and fails if it cannot be used. It
// starts nothing: the files are checked during handshakes. A nil logger
// discards logs.
func NewReloader(cfg ReloaderConfig, logger *slog.Logger) (*Reloader, error) {
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("tlsutil: both a certificate file and a key file are required")
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{cfg: cfg, logger: logger}
	st, err := r.statFiles()
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.stamp, r.certPEM, r.keyPEM, r.lastCheck = st, certPEM, keyPEM, time.Now()
	r.cert.Store(cert)
	return r, nil
}

// GetCertificate is for tls.Config.GetCertificate (servers).
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Current(), nil
}

// GetClientCertificate is for tls.Config.GetClientCertificate (clients).
func (r *Reloader) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return r.Current(), nil
}

// Current returns the certificate to serve, after checking the files if
// CheckInterval has passed since the last check.
func (r *Reloader) Current() *tls.Certificate {
	r.maybeReload(time.Now())
	return r.cert.Load()
}

// Stats returns the counters and the expiry of the certificate the next
// handshake gets. It checks the files like a handshake does, so a scrape
// of these stats notices a renewal (or a broken one) without waiting for
// a new connection.
func (r *Reloader) Stats() Stats {
	r.maybeReload(time.Now())
	s := Stats{Reloads: r.reloads.Load(), Failures: r.failures.Load()}
	if c := r.cert.Load(); c != nil && c.Leaf != nil {
		s.NotAfter = c.Leaf.NotAfter
	}
	return s
}

func (r *Reloader) maybeReload(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastCheck) < r.cfg.CheckInterval {
		return
	}
	r.lastCheck = now
	st, err := r.statFiles()
	if err != nil {
		// A file briefly missing during a rename: keep serving.
		if st != r.stamp {
			r.logger.Error("TLS certificate files unreadable; keeping the current certificate", "err", err)
			r.stamp = st
		}
		return
	}
	if st == r.stamp {
		return
	}
	r.stamp = st
	certPEM, keyPEM, cert, err := r.load()
	if certPEM != nil && bytes.Equal(certPEM, r.certPEM) && bytes.Equal(keyPEM, r.keyPEM) {
		return // touched, not changed
	}
	if err != nil {
		r.failures.Add(1)
		r.logger.Error("renewed TLS certificate refused; keeping the current one",
			"cert_file", r.cfg.CertFile, "key_file", r.cfg.KeyFile, "err", err)
		return
	}
	r.certPEM, r.keyPEM = certPEM, keyPEM
	r.cert.Store(cert)
	r.reloads.Add(1)
	r.logger.Info("TLS certificate reloaded", "cert_file", r.cfg.CertFile,
		"subject", cert.Leaf.Subject.String(), "serial", fmt.Sprintf("%X", cert.Leaf.SerialNumber), "not_after", cert.Leaf.NotAfter)
}

func (r *Reloader) statFiles() (stamp, error) {
	c, err := os.Stat(r.cfg.CertFile)
	if err != nil {
		return stamp{}, fmt.Errorf("tlsutil: certificate file: %w", err)
	}
	k, err := os.Stat(r.cfg.KeyFile)
	if err != nil {
		return stamp{}, fmt.Errorf("tlsutil: key file: %w", err)
	}
	return stamp{certSize: c.Size(), keySize: k.Size(), certMod: c.ModTime(), keyMod: k.ModTime()}, nil
}

// load reads and parses the pair. It returns the PEM bytes read even when
// they do not form a usable pair.
func (r *Reloader) load() (certPEM, keyPEM []byte, cert *tls.Certificate, err error) {
	certPEM, err = os.ReadFile(r.cfg.CertFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tlsutil: read certificate file: %w", err)
	}
	keyPEM, err = os.ReadFile(r.cfg.KeyFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tlsutil: read key file: %w", err)
	}
	c, err := ParsePair(certPEM, keyPEM)
	if err != nil {
		return certPEM, keyPEM, nil, fmt.Errorf("tlsutil: %s and %s: %w", r.cfg.CertFile, r.cfg.KeyFile, err)
	}
	return certPEM, keyPEM, c, nil
}

// ParsePair parses a PEM certificate chain and its key and checks that the
// leaf is currently valid.
func ParsePair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, err
		}
	}
	if now := time.Now(); now.After(c.Leaf.NotAfter) {
		return nil, fmt.Errorf("certificate expired at %s", c.Leaf.NotAfter.Format(time.RFC3339))
	}
	return &c, nil
}
