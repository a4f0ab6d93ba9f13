// Package sub is the data node's end of the cluster protocol: a gRPC server
// for banyandb.cluster.v1.QueueService that hands each received batch to its
// topic's listener and acks it (docs/design/cluster-protocol.md).
package sub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/banyand-io/banyand/pkg/wire"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/grpchealth"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/tlsutil"
)

// ProtocolVersion is the cluster protocol version this server speaks.
const ProtocolVersion = 1

// Defaults for the zero values of Config.
const (
	DefaultMaxRecvMsgSize  = 16 << 20
	DefaultStopGrace       = 10 * time.Second
	DefaultListenerWorkers = 4
	// DefaultMaxReplyBytes keeps an ack with replies well inside the
	// publisher's receive bound (pub.DefaultMaxRecvMsgSize, 64 MiB).
	DefaultMaxReplyBytes = 32 << 20
)

// Config configures a Server. Zero values take the defaults.
type Config struct {
	// NodeName is announced in HelloAck.
	NodeName string
	// MaxRecvMsgSize is gRPC's max receive message size, so the largest
	// encoded Batch; it is announced as HelloAck.max_batch_bytes. A bigger
	// frame is refused by gRPC itself: the stream ends with RESOURCE_EXHAUSTED
	// (there is no batch id to ack), the publisher must split and reconnect.
	// Default 16 MiB.
	MaxRecvMsgSize int
	// MaxBatchMessages, when > 0, is the most messages a Batch may carry; a
	// bigger one is acked with CODE_TOO_LARGE without calling the listener.
	MaxBatchMessages int
	// TLS, when set, serves TLS; set ClientAuth (and ClientCAs) for mTLS.
	// Nil serves plaintext.
	TLS *tls.Config
	// OnHandshakeFailure, when set with TLS, is told of every failed TLS
	// handshake (a publisher without the right certificate, say).
	OnHandshakeFailure func(remote net.Addr, err error)
	// StopGrace bounds Stop's drain when its ctx has a later deadline or
	// none. Default 10s.
	StopGrace time.Duration
	// ListenerWorkers is how many batches of one stream may be in listeners
	// at once. When all are busy the stream is not read, so gRPC flow
	// control holds the publisher back. Default 4.
	ListenerWorkers int
	// MaxReplyBytes bounds the replies of one ack. A reply that would take
	// them past it is not sent: its message fails with
	// CODE_RESOURCE_EXHAUSTED. An ack beyond the publisher's receive bound
	// would end the stream, and with it the writes in flight on it; so a
	// query asking for too much fails alone. Default 32 MiB.
	MaxReplyBytes int
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	if c.MaxRecvMsgSize < 0 || c.MaxBatchMessages < 0 || c.StopGrace < 0 || c.ListenerWorkers < 0 || c.MaxReplyBytes < 0 {
		return fmt.Errorf("sub: config: negative MaxRecvMsgSize, MaxBatchMessages, StopGrace, ListenerWorkers or MaxReplyBytes: %+v", c)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxRecvMsgSize <= 0 {
		c.MaxRecvMsgSize = DefaultMaxRecvMsgSize
	}
	if c.StopGrace <= 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.ListenerWorkers <= 0 {
		c.ListenerWorkers = DefaultListenerWorkers
	}
	if c.MaxReplyBytes <= 0 {
		c.MaxReplyBytes = DefaultMaxReplyBytes
	}
	return c
}

// Server is the QueueService subscriber. Subscribe listeners at any time;
// Serve serves until Stop.
type Server struct {
	clusterv1.UnimplementedQueueServiceServer

	cfg Config
	log *slog.Logger
	// health's Watch streams are ended once the queue streams have
	// drained (see grpchealth); they would hold a graceful stop forever.
	health *grpchealth.Service

	// topics is replaced, never modified, under mu: the stream path reads
	// it without a lock.
	topics atomic.Pointer[map[queue.Topic]queue.Listener]

	// inflight counts batches inside listeners, for Stop's report.
	inflight atomic.Int64

	// mu guards the fields below. A stream registers in streams under mu
	// only while draining is open, so Stop's wait cannot miss one.
	mu       sync.Mutex
	gs       *grpc.Server
	stopping bool
	draining chan struct{} // closed when Stop begins
	stopped  chan struct{} // closed when Stop returns
	streams  sync.WaitGroup
}

var _ queue.Server = (*Server)(nil)

// New returns a server; it starts nothing. A nil logger discards logs.
func New(cfg Config, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:      cfg.withDefaults(),
		log:      logger.With("component", "queue-sub"),
		health:   grpchealth.New(),
		draining: make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	s.topics.Store(&map[queue.Topic]queue.Listener{})
	// Not serving until Serve runs.
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(clusterv1.QueueService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	return s
}

// Subscribe registers l for topic; one listener per topic. Listeners may be
// called concurrently, from every stream.
func (s *Server) Subscribe(topic queue.Topic, l queue.Listener) error {
	if topic == "" || l == nil {
		return fmt.Errorf("sub: subscribe to %q: empty topic or nil listener", topic)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return fmt.Errorf("sub: subscribe to %q: %w", topic, queue.ErrClosed)
	}
	old := *s.topics.Load()
	if _, ok := old[topic]; ok {
		return fmt.Errorf("sub: subscribe to %q: topic already has a listener", topic)
	}
	next := make(map[queue.Topic]queue.Listener, len(old)+1)
	for t, l := range old {
		next[t] = l
	}
	next[topic] = l
	s.topics.Store(&next)
	return nil
}

func (s *Server) listener(topic string) queue.Listener {
	return (*s.topics.Load())[queue.Topic(topic)]
}

// Serve serves QueueService and the gRPC health service on lis until Stop,
// then returns nil. It may be called once.
func (s *Server) Serve(lis net.Listener) error {
	s.mu.Lock()
	if s.stopping || s.gs != nil {
		s.mu.Unlock()
		_ = lis.Close()
		return fmt.Errorf("sub: serve: server already stopped or serving: %w", queue.ErrClosed)
	}
	s.gs = grpc.NewServer(s.serverOptions()...)
	clusterv1.RegisterQueueServiceServer(s.gs, s)
	s.health.Register(s.gs)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(clusterv1.QueueService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	gs := s.gs
	s.mu.Unlock()
	s.log.Info("serving", "addr", lis.Addr().String(), "tls", s.cfg.TLS != nil)
	// ErrServerStopped: Stop came between the unlock above and Serve.
	if err := gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("sub: serve on %s: %w", lis.Addr(), err)
	}
	return nil
}

func (s *Server) serverOptions() []grpc.ServerOption {
	onPanic := recovery.WithRecoveryHandler(func(p any) error {
		s.log.Error("grpc handler panicked", "panic", p)
		return status.Errorf(codes.Internal, "subscriber %s: internal error", s.cfg.NodeName)
	})
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.cfg.MaxRecvMsgSize),
		grpc.ForceServerCodecV2(wire.Codec()),
		// Large windows keep several big batches in flight on one stream;
		// gRPC's 64 KiB default would make the publisher stop and wait.
		grpc.InitialWindowSize(8 << 20),
		grpc.InitialConnWindowSize(16 << 20),
		grpc.ReadBufferSize(256 << 10),
		grpc.WriteBufferSize(64 << 10),
		// Publishers keep idle streams alive with pings.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(onPanic)),
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(onPanic)),
	}
	if s.cfg.TLS != nil {
		opts = append(opts, grpc.Creds(tlsutil.ServerCredentials(s.cfg.TLS, s.cfg.OnHandshakeFailure)))
	}
	return opts
}

// Stop stops the server in two phases. First it drains: health turns
// NOT_SERVING, no new stream or connection is accepted, batches already
// received run to their ack, later batches are acked CODE_UNAVAILABLE, and
// each stream then ends with UNAVAILABLE so its publisher goes elsewhere.
// When every stream has ended, or when ctx is done or StopGrace has passed,
// it closes every connection. In the second case it returns an error
// counting the batches abandoned in listeners (their listeners see their
// ctx cancelled). Stop may be called more than once, before or after Serve.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		select {
		case <-s.stopped:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("sub: stop: %w", ctx.Err())
		}
	}
	s.stopping = true
	close(s.draining)
	gs := s.gs
	s.mu.Unlock()
	defer close(s.stopped)

	s.health.Shutdown() // NOT_SERVING to every watcher
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StopGrace)
	defer cancel()

	var graceDone chan struct{}
	if gs != nil {
		graceDone = make(chan struct{})
		go func() {
			defer close(graceDone)
			gs.GracefulStop() // refuse new connections and streams
		}()
	}
	streamsDone := make(chan struct{})
	go func() {
		s.streams.Wait()
		close(streamsDone)
	}()
	select {
	case <-streamsDone:
	case <-ctx.Done():
		return s.forceStop(ctx, gs)
	}
	s.health.EndWatches()
	if gs != nil {
		// GracefulStop returns once every connection has flushed its last
		// frames (the final acks and statuses) and closed.
		select {
		case <-graceDone:
		case <-ctx.Done():
			return s.forceStop(ctx, gs)
		}
	}
	s.log.Info("stopped")
	return nil
}

func (s *Server) forceStop(ctx context.Context, gs *grpc.Server) error {
	s.health.EndWatches()
	n := s.inflight.Load()
	if gs != nil {
		gs.Stop()
	}
	s.log.Warn("forced stop: batches abandoned in listeners", "batches", n, "err", ctx.Err())
	return fmt.Errorf("sub: stop: forced with %d batches still in listeners: %w", n, ctx.Err())
}

// Stream implements QueueService.
func (s *Server) Stream(gs clusterv1.QueueService_StreamServer) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return status.Errorf(codes.Unavailable, "subscriber %s is shutting down", s.cfg.NodeName)
	}
	s.streams.Add(1)
	s.mu.Unlock()
	defer s.streams.Done()
	st := newStream(s, gs)
	err := st.run()
	if err != nil && !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
		s.log.Debug("stream ended", "peer", st.peer, "err", err)
	}
	return err
}
