package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/wire"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startSink(t *testing.T) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer()
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	return conn
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A BanyanDB client gets the answer a real server gives to a good write:
// its message_id, STATUS_SUCCEED and its metadata, for each request.
func TestAnswersEveryWriteAsABanyanDBClientExpects(t *testing.T) {
	conn := startSink(t)
	ctx := testContext(t)
	st, err := streamv1.NewStreamServiceClient(conn).Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md := &commonv1.Metadata{Group: "g", Name: "s", ModRevision: 7}
	for id := uint64(1); id <= 3; id++ {
		req := &streamv1.WriteRequest{Metadata: md, MessageId: id, Element: &streamv1.ElementValue{ElementId: "e"}}
		if err := st.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetMessageId() != id || resp.GetStatus() != "STATUS_SUCCEED" || !proto.Equal(resp.GetMetadata(), md) {
			t.Fatalf("response to message %d: %v", id, resp)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err == nil {
		t.Fatal("stream did not end after the client closed its side")
	}

	// The measure service answers the same way; no metadata, none echoed.
	ms, err := measurev1.NewMeasureServiceClient(conn).Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.Send(&measurev1.WriteRequest{MessageId: 9}); err != nil {
		t.Fatal(err)
	}
	resp, err := ms.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetMessageId() != 9 || resp.GetStatus() != "STATUS_SUCCEED" || resp.Metadata != nil {
		t.Fatalf("measure response: %v", resp)
	}
	_ = ms.CloseSend()
}

// A frame that is not a protobuf message ends that stream with
// InvalidArgument; the server goes on answering other streams.
func TestGarbageEndsOnlyItsStream(t *testing.T) {
	conn := startSink(t)
	ctx := testContext(t)
	desc := &grpc.StreamDesc{StreamName: "Write", ServerStreams: true, ClientStreams: true}
	bad, err := conn.NewStream(ctx, desc, "/banyandb.stream.v1.StreamService/Write",
		grpc.ForceCodecV2(wire.Codec()))
	if err != nil {
		t.Fatal(err)
	}
	// Field 1 declared as 100 bytes long, with 2 following.
	if err := bad.SendMsg(&wire.Frame{Raw: []byte{0x0a, 100, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	err = bad.RecvMsg(&wire.Frame{})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("garbage frame: got %v, want InvalidArgument", err)
	}

	st, err := streamv1.NewStreamServiceClient(conn).Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&streamv1.WriteRequest{MessageId: 5}); err != nil {
		t.Fatal(err)
	}
	if resp, err := st.Recv(); err != nil || resp.GetMessageId() != 5 {
		t.Fatalf("after a garbage stream: %v, %v", resp, err)
	}
	_ = st.CloseSend()
}
