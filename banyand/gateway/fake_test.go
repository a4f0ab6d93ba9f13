package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// fakeServer is a gRPC server that answers any method with what answer
// says, and records each call's request bytes and metadata.
type fakeServer struct {
	// answer returns the response (or error) of one call of method.
	answer func(method string) (proto.Message, error)

	mu    sync.Mutex
	calls []call
}

type call struct {
	method string
	req    []byte
	md     metadata.MD
}

func (f *fakeServer) handle(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	// An Empty keeps every field it does not know as raw bytes, so
	// marshalling it again gives the request as sent.
	req := new(emptypb.Empty)
	if err := stream.RecvMsg(req); err != nil {
		return err
	}
	raw, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	md, _ := metadata.FromIncomingContext(stream.Context())
	f.mu.Lock()
	f.calls = append(f.calls, call{method: method, req: raw, md: md})
	f.mu.Unlock()
	resp, err := f.answer(method)
	if err != nil {
		return err
	}
	return stream.SendMsg(resp)
}

// last is the last call the server saw.
func (f *fakeServer) last(t *testing.T) call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("the gRPC server saw no call")
	}
	return f.calls[len(f.calls)-1]
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// env is a gateway in front of a fake gRPC server, served over loopback
// HTTP as the roles mount it.
type env struct {
	fake   *fakeServer
	gw     *Gateway
	base   string // http://host:port
	client *http.Client
}

func newEnv(t *testing.T, maxBody int64) *env {
	t.Helper()
	fake := &fakeServer{answer: func(string) (proto.Message, error) { return new(emptypb.Empty), nil }}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(fake.handle))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})

	gw := New(Config{MaxBodyBytes: maxBody}, Deps{Logger: slog.New(slog.DiscardHandler), Target: func() string { return lis.Addr().String() }})
	mux := http.NewServeMux()
	mux.Handle(Prefix+"/", gw)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hsrv := &http.Server{Handler: mux}
	httpDone := make(chan struct{})
	go func() {
		defer close(httpDone)
		_ = hsrv.Serve(hl)
	}()
	t.Cleanup(func() {
		_ = hsrv.Close()
		<-httpDone
	})
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop(context.Background()) })
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	return &env{fake: fake, gw: gw, base: "http://" + hl.Addr().String(), client: client}
}

// do sends one request and returns the status and body.
func (e *env) do(t *testing.T, method, path, contentType, body string, header ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, e.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}
