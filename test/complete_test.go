package test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
)

// A query answers OK only with every acknowledged write in its range:
// with replicas = 0 and one of two data nodes stopped (out of the node
// table, its shards placed on the other), a query of the group fails with
// UNAVAILABLE naming the node, instead of answering with half the data;
// once the node is back the answer is complete again.
func TestClusterQueryIsCompleteOrLoud(t *testing.T) {
	c := startCluster(t, 2, 1)
	conn := c.liaisons[0]
	createStreamSchema(t, conn, 4)
	const n = 200
	checkStreamRoundTrip(t, conn, n, 40) // both nodes hold some of the shards

	c.data[1].stop(t)
	query := func() ([]*streamv1.Element, error) {
		resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
			Groups: []string{streamGroup}, Name: streamName, Limit: n + 10,
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
		})
		return resp.GetElements(), err
	}
	// The node leaves the table when it deregisters; until the liaison
	// has seen that, the query fails asking it.
	poll.Within(t, 20*time.Second, "a query without data-1 fails UNAVAILABLE naming it", func() bool {
		els, err := query()
		if err == nil {
			if len(els) < n {
				t.Fatalf("query answered OK with %d of %d acknowledged elements", len(els), n)
			}
			return false
		}
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("query with data-1 away: %v, want UNAVAILABLE", err)
		}
		return strings.Contains(err.Error(), "data-1") && strings.Contains(err.Error(), "hold data")
	})

	c.data[1] = c.startDataNode(1)
	poll.Within(t, 20*time.Second, "a complete answer once data-1 is back", func() bool {
		els, err := query()
		if err != nil {
			return false
		}
		if len(els) != n {
			t.Fatalf("query answered OK with %d of %d acknowledged elements", len(els), n)
		}
		return true
	})
}

// A query whose answer is more than a data node sends in one ack fails
// alone with RESOURCE_EXHAUSTED; the stream it shares with the writes goes
// on, so a write stream open across it keeps being answered.
func TestClusterOversizedQueryAnswerFailsAlone(t *testing.T) {
	c := &cluster{t: t, etcd: etcdtest.Start(t)}
	c.dataDirs = append(c.dataDirs, t.TempDir())
	var s roles.Storage
	s.SetDefaults()
	s.GRPCAddr, s.HTTPAddr, s.DataPath, s.NodeName = "127.0.0.1:0", "", c.dataDirs[0], "data-0"
	s.NodeTTL = 2 * time.Second
	s.Etcd.Endpoints = []string{c.etcd.Endpoint()}
	s.Sub.MaxReplyBytes = 16 << 10
	c.data = append(c.data, runStorage(t, &s))
	c.waitRegistered(1)
	conn := c.startLiaison()
	createStreamSchema(t, conn, 2)
	checkStreamRoundTrip(t, conn, 20, 5) // a small answer fits

	ws, err := streamv1.NewStreamServiceClient(conn).Write(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	send := func(i int) {
		t.Helper()
		if err := ws.Send(&streamv1.WriteRequest{Metadata: streamMD, MessageId: uint64(i), Element: testElement(i, 5)}); err != nil {
			t.Fatal(err)
		}
		if r, err := ws.Recv(); err != nil || r.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("write %d on the open stream: %v, %v", i, r, err)
		}
	}
	for i := 20; i < 200; i++ {
		send(i)
	}
	_, err = tryQueryAllStream(t, conn, 1000)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("query of 200 elements with 16 KiB of reply room: %v, want RESOURCE_EXHAUSTED", err)
	}
	for i := 200; i < 210; i++ {
		send(i)
	}
	if err := ws.CloseSend(); err != nil {
		t.Fatal(err)
	}
}
