package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/pkg/run"
)

// testWriter sends logs and progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// syncBuffer collects the final report.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// parseConfig builds a Config as the command line would.
func parseConfig(t *testing.T, args ...string) Config {
	t.Helper()
	var cfg Config
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return cfg
}

// startTestStandalone runs roles.Standalone in process on 127.0.0.1:0, as
// test/harness_test.go does, and returns its client address and the
// address of its HTTP server (/metrics). It stops at cleanup.
func startTestStandalone(t *testing.T) (addr, httpAddr string) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var sa roles.Standalone
	sa.SetDefaults("127.0.0.1:0", t.TempDir())
	sa.HTTPAddr = "127.0.0.1:0"
	if err := sa.Validate(); err != nil {
		t.Fatal(err)
	}
	comps, err := sa.Components(logger)
	if err != nil {
		t.Fatal(err)
	}
	g := run.NewGroup(run.Config{Name: "standalone", StopTimeout: 20 * time.Second}, logger, comps...)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("standalone stopped with error: %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for sa.ClientAddr() == "" || sa.HTTPBoundAddr() == "" {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("standalone exited while starting: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("standalone not listening after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sa.ClientAddr(), sa.HTTPBoundAddr()
}

// fakeStreams is a StreamService whose Write answers each message with
// answer's status, or not at all when answer says so, and whose Query
// returns query's result.
type fakeStreams struct {
	streamv1.UnimplementedStreamServiceServer
	answer func(req *streamv1.WriteRequest) (status string, respond bool)
	query  func(req *streamv1.QueryRequest) (*streamv1.QueryResponse, error)
	// hold keeps a stream open after the client's CloseSend, as a server
	// that hangs would.
	hold bool
}

func (f *fakeStreams) Write(s streamv1.StreamService_WriteServer) error {
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			if f.hold {
				<-s.Context().Done()
			}
			return nil
		}
		if err != nil {
			return err
		}
		st, ok := f.answer(req)
		if !ok {
			continue
		}
		if err := s.Send(&streamv1.WriteResponse{MessageId: req.GetMessageId(), Status: st}); err != nil {
			return err
		}
	}
}

func (f *fakeStreams) Query(_ context.Context, req *streamv1.QueryRequest) (*streamv1.QueryResponse, error) {
	return f.query(req)
}

// startFake serves f on a loopback port until cleanup.
func startFake(t *testing.T, f *fakeStreams) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	streamv1.RegisterStreamServiceServer(srv, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}
