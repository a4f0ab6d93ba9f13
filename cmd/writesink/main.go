// Command writesink is a BanyanDB write server that does nothing: it answers
// every stream.v1 and measure.v1 Write request at once with STATUS_SUCCEED,
// its message_id and its metadata echoed, and keeps nothing.
//
// It measures the transport's ceiling for the public write API on a
// machine: `scripts/bench.sh sink` loads it with `banyand bench` exactly as
// the real servers are loaded, so the gap between its rate and
// standalone's is what banyand's own work costs, and its rate bounds what
// any server speaking this API could reach there (docs/performance.md).
// It is a measuring instrument, not a server to deploy.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/banyand-io/banyand/pkg/wire"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "writesink:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("writesink", flag.ContinueOnError)
	grpcAddr := fs.String("grpc-addr", "127.0.0.1:17913", "address of the write API")
	httpAddr := fs.String("http-addr", "", "address of /metrics (the process's CPU, for `banyand bench --server-metrics`); empty: none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	lis, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		return err
	}
	srv := newServer()
	var web *http.Server
	if *httpAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.Handler())
		web = &http.Server{Addr: *httpAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = web.ListenAndServe() }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Stop()
		if web != nil {
			_ = web.Close()
		}
	}()
	fmt.Fprintf(os.Stderr, "writesink: serving the write API on %s\n", lis.Addr())
	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// newServer returns the write API's server, not yet serving.
func newServer() *grpc.Server {
	srv := grpc.NewServer(grpc.ForceServerCodecV2(wire.Codec()),
		// The flow-control windows of banyand's client-facing server.
		grpc.InitialWindowSize(4<<20), grpc.InitialConnWindowSize(8<<20))
	for _, service := range []string{"banyandb.stream.v1.StreamService", "banyandb.measure.v1.MeasureService"} {
		srv.RegisterService(&grpc.ServiceDesc{
			ServiceName: service,
			HandlerType: (*any)(nil),
			Streams: []grpc.StreamDesc{{
				StreamName: "Write", Handler: answerWrites, ServerStreams: true, ClientStreams: true,
			}},
		}, struct{}{})
	}
	return srv
}

// answerWrites answers each request as it is received, on the stream's own
// goroutine: receiving a request and sending its response is the least any
// server of this API does.
func answerWrites(_ any, st grpc.ServerStream) error {
	var in, out wire.Frame
	for {
		in.Release()
		if err := st.RecvMsg(&in); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		id, md, err := wire.ParseRequestHead(in.Raw)
		if err != nil {
			in.Release()
			return status.Errorf(codes.InvalidArgument, "writesink: %v", err)
		}
		// A buffer of its own: grpc writes the bytes after SendMsg returns.
		b := make([]byte, 0, 2*binary.MaxVarintLen64+len(statusSucceed)+len(md))
		out.Raw = wire.AppendWriteResponse(b, id, statusSucceed, md, md != nil)
		if err := st.SendMsg(&out); err != nil {
			in.Release()
			return err
		}
	}
}

const statusSucceed = "STATUS_SUCCEED"
