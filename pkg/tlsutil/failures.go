package tlsutil

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// HandshakeFailures counts failed TLS handshakes and logs them, at most
// one line per interval (with the number left unlogged), so a client
// retrying in a loop or a scanner cannot flood the log. A connection
// closed before any TLS byte (a TCP health probe) is not a failure.
type HandshakeFailures struct {
	logger   *slog.Logger
	interval time.Duration
	count    atomic.Int64

	mu         sync.Mutex
	lastLog    time.Time
	suppressed int64
}

// NewHandshakeFailures returns a reporter; interval 0 means 10s.
func NewHandshakeFailures(logger *slog.Logger, interval time.Duration) *HandshakeFailures {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &HandshakeFailures{logger: logger, interval: interval}
}

// Report is for ServerCredentials' onFailure.
func (h *HandshakeFailures) Report(remote net.Addr, err error) {
	if errors.Is(err, io.EOF) {
		return
	}
	h.count.Add(1)
	h.mu.Lock()
	now := time.Now()
	if now.Sub(h.lastLog) < h.interval {
		h.suppressed++
		h.mu.Unlock()
		return
	}
	suppressed := h.suppressed
	h.lastLog, h.suppressed = now, 0
	h.mu.Unlock()
	h.logger.Warn("TLS handshake failed", "remote", remote.String(), "err", err, "more_since_last_log", suppressed)
}

// Count is the number of failed handshakes so far.
func (h *HandshakeFailures) Count() int64 { return h.count.Load() }
