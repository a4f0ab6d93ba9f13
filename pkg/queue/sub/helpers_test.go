package sub_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
)

const nodeName = "data-1"

// testServer is a Server serving on 127.0.0.1:0.
type testServer struct {
	*sub.Server
	addr     string
	stopOnce sync.Once
	served   chan error
}

// startServer serves cfg with the given listeners. Cleanup stops it.
func startServer(t testing.TB, cfg sub.Config, topics map[queue.Topic]queue.Listener) *testServer {
	t.Helper()
	if cfg.NodeName == "" {
		cfg.NodeName = nodeName
	}
	s := sub.New(cfg, nil)
	for topic, l := range topics {
		if err := s.Subscribe(topic, l); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, addr: lis.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- s.Serve(lis) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop stops the server (once) and checks that Serve returned nil.
func (ts *testServer) stop(t testing.TB) {
	ts.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = ts.Stop(ctx)
		select {
		case err := <-ts.served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-ctx.Done():
			t.Error("Serve did not return after Stop")
		}
	})
}

func dial(t testing.TB, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithInitialWindowSize(8<<20), grpc.WithInitialConnWindowSize(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// rawStream is a hand-written publisher end of one QueueService stream.
type rawStream struct {
	t      testing.TB
	cancel context.CancelFunc
	s      grpc.BidiStreamingClient[clusterv1.StreamRequest, clusterv1.StreamResponse]
}

func openStream(t testing.TB, conn *grpc.ClientConn) *rawStream {
	t.Helper()
	r, err := tryOpenStream(t, conn)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tryOpenStream(t testing.TB, conn *grpc.ClientConn) (*rawStream, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := clusterv1.NewQueueServiceClient(conn).Stream(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	t.Cleanup(cancel)
	return &rawStream{t: t, cancel: cancel, s: s}, nil
}

// wantRefused expects a stream on conn never to complete a handshake: either
// opening it or its first Recv fails with code.
func wantRefused(t testing.TB, conn *grpc.ClientConn, code codes.Code) {
	t.Helper()
	r, err := tryOpenStream(t, conn)
	if err == nil {
		_ = r.s.Send(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Hello{Hello: &clusterv1.Hello{ProtocolVersion: 1}}})
		var resp *clusterv1.StreamResponse
		if resp, err = r.recvErr(); err == nil {
			t.Fatalf("refused client got %v", resp)
		}
	}
	if !isStatus(err, code) {
		t.Fatalf("refused client: %v, want %v", err, code)
	}
}

func (r *rawStream) send(req *clusterv1.StreamRequest) {
	r.t.Helper()
	if err := r.s.Send(req); err != nil {
		r.t.Fatalf("Send: %v", err)
	}
}

func (r *rawStream) hello(version uint32) {
	r.t.Helper()
	r.send(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Hello{Hello: &clusterv1.Hello{
		ProtocolVersion: version, NodeName: "liaison-1",
	}}})
}

// handshake sends Hello v1 and checks the HelloAck.
func (r *rawStream) handshake() *clusterv1.HelloAck {
	r.t.Helper()
	r.hello(1)
	resp := r.recv()
	ha := resp.GetHelloAck()
	if ha == nil {
		r.t.Fatalf("first response %v, want HelloAck", resp)
	}
	return ha
}

func (r *rawStream) batch(id uint64, topic queue.Topic, deadline time.Time, msgs ...[]byte) {
	r.t.Helper()
	var d int64
	if !deadline.IsZero() {
		d = deadline.UnixNano()
	}
	r.send(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Batch{Batch: &clusterv1.Batch{
		BatchId: id, Topic: string(topic), Messages: msgs, DeadlineUnixNano: d,
	}}})
}

// recv returns the next frame; a stream error fails the test.
func (r *rawStream) recv() *clusterv1.StreamResponse {
	r.t.Helper()
	resp, err := r.recvErr()
	if err != nil {
		r.t.Fatalf("Recv: %v", err)
	}
	return resp
}

// recvErr returns the next frame or the stream's end, within a deadline.
func (r *rawStream) recvErr() (*clusterv1.StreamResponse, error) {
	type result struct {
		resp *clusterv1.StreamResponse
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := r.s.Recv()
		ch <- result{resp, err}
	}()
	select {
	case res := <-ch:
		return res.resp, res.err
	case <-time.After(10 * time.Second):
		r.cancel() // unblocks the Recv above
		r.t.Fatal("no frame within 10s")
		return nil, nil
	}
}

func (r *rawStream) ack() *clusterv1.Ack {
	r.t.Helper()
	resp := r.recv()
	a := resp.GetAck()
	if a == nil {
		r.t.Fatalf("response %v, want Ack", resp)
	}
	return a
}

// wantEnd expects the stream to end with code.
func (r *rawStream) wantEnd(code codes.Code) error {
	r.t.Helper()
	for {
		resp, err := r.recvErr()
		if err == nil {
			r.t.Logf("frame before the end: %v", resp)
			continue
		}
		if got := status.Code(err); got != code {
			r.t.Fatalf("stream ended with %v, want %v", err, code)
		}
		return err
	}
}

// gate is a listener that blocks every batch until released (or its ctx
// ends), recording what it saw.
type gate struct {
	release chan struct{}
	once    sync.Once

	mu       sync.Mutex
	entered  int
	canceled int
}

func newGate(t testing.TB) *gate {
	g := &gate{release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) Handle(ctx context.Context, b queue.Batch) queue.Result {
	g.mu.Lock()
	g.entered++
	g.mu.Unlock()
	select {
	case <-g.release:
		return queue.Result{}
	case <-ctx.Done():
		g.mu.Lock()
		g.canceled++
		g.mu.Unlock()
		errs := make([]error, len(b.Messages))
		for i := range errs {
			errs[i] = ctx.Err()
		}
		return queue.Result{Errs: errs}
	}
}

func (g *gate) counts() (entered, canceled int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.entered, g.canceled
}

var nop = queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result { return queue.Result{} })

func tlsCreds(cfg *tls.Config) credentials.TransportCredentials { return credentials.NewTLS(cfg) }

func isStatus(err error, code codes.Code) bool {
	var se interface{ GRPCStatus() *status.Status }
	return errors.As(err, &se) && se.GRPCStatus().Code() == code
}
