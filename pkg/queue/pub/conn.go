package pub

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/banyand-io/banyand/pkg/wire"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/keepalive"
)

// dialOptions tune a node's connection for throughput: large flow-control
// windows so a window of batches is never throttled by HTTP/2, and large
// buffers so a batch is written in few syscalls.
func (c *Client) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(c.creds),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: c.cfg.MaxBackoff,
			},
			MinConnectTimeout: c.cfg.HandshakeTimeout,
		}),
		grpc.WithInitialWindowSize(8 << 20),
		grpc.WithInitialConnWindowSize(16 << 20),
		grpc.WithWriteBufferSize(512 << 10),
		grpc.WithReadBufferSize(256 << 10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(c.cfg.MaxRecvMsgSize), grpc.ForceCodecV2(wire.Codec())),
		// Pings find a peer that vanished without closing TCP when no
		// stream is busy enough for the stall check to notice.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second}),
	}
}

// jitterBackoff paces re-opening a stream: exponential, with each wait
// drawn from [d/2, d) so publishers do not reconnect in lockstep.
type jitterBackoff struct {
	base, max, cur time.Duration
}

func (b *jitterBackoff) reset() { b.cur = 0 }

func (b *jitterBackoff) wait(ctx context.Context) bool {
	if b.cur == 0 {
		b.cur = b.base
	}
	d := b.cur/2 + rand.N(b.cur/2+1)
	b.cur = min(b.cur*2, b.max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
