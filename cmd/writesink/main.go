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
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
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
	srv := grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{std: encoding.GetCodecV2(proto.Name)}),
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
	var in, out frame
	for {
		in.release()
		if err := st.RecvMsg(&in); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		// A buffer of its own: grpc writes the bytes after SendMsg returns.
		resp, err := response(in.raw)
		if err != nil {
			in.release()
			return status.Errorf(codes.InvalidArgument, "writesink: %v", err)
		}
		out.raw = resp
		if err := st.SendMsg(&out); err != nil {
			in.release()
			return err
		}
	}
}

const statusSucceed = "STATUS_SUCCEED"

// response encodes the WriteResponse to a stream.v1 or measure.v1
// WriteRequest (the same field numbers): message_id (3 in the request, 1
// in the response) and metadata (1 in the request, 3 in the response).
func response(req []byte) ([]byte, error) {
	var id uint64
	var md []byte
	hasMD := false
	for len(req) > 0 {
		num, typ, n := protowire.ConsumeTag(req)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		req = req[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			md, n = protowire.ConsumeBytes(req)
			hasMD = true
		case num == 3 && typ == protowire.VarintType:
			id, n = protowire.ConsumeVarint(req)
		default:
			n = protowire.ConsumeFieldValue(num, typ, req)
		}
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		req = req[n:]
	}
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(statusSucceed)+len(md))
	if id != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, id)
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, statusSucceed)
	if hasMD {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, md)
	}
	return b, nil
}

// frame is a message as its wire bytes. Received, it aliases grpc's pooled
// buffer when the message came in one (held, given back by release).
type frame struct {
	raw  []byte
	held mem.BufferSlice
}

func (f *frame) release() {
	if f.held != nil {
		f.held.Free()
	}
	f.raw, f.held = nil, nil
}

// rawCodec passes frames through as bytes and leaves every other message
// (the health and reflection services, if any) to grpc's proto codec.
type rawCodec struct{ std encoding.CodecV2 }

func (c rawCodec) Name() string { return proto.Name }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*frame); ok {
		return mem.BufferSlice{mem.SliceBuffer(f.raw)}, nil
	}
	return c.std.Marshal(v)
}

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*frame); ok {
		if len(data) == 1 {
			data.Ref() // grpc frees data when Unmarshal returns
			f.raw, f.held = data[0].ReadOnlyData(), data
			return nil
		}
		f.raw = data.Materialize()
		return nil
	}
	return c.std.Unmarshal(data, v)
}
