//go:build faults

package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// A data node is killed with SIGKILL under load and left down past its
// lease (replicas = 0, so its shards' data is nowhere else): no query of
// the group answers OK while it is down (each fails UNAVAILABLE, naming it
// once it has left the node table); restarted, everything acknowledged is
// readable.
func TestKilledDataNodeLeftDownQueriesFailLoudly(t *testing.T) {
	u := startUnderLoad(t)
	c, nodes, conn, ld := u.c, u.nodes, u.conn, u.ld
	nodes[1].p.kill()
	t.Logf("killed %s (SIGKILL) after %d acks; leaving it down", nodes[1].name, ld.acked.Load())

	// Past the node's lease (2 s) and the liaison's view of it, with
	// queries all along.
	var ok, unavailable, named, other int
	deadline := time.Now().Add(2 * faultWindow)
	for time.Now().Before(deadline) {
		err := queryGroup(conn)
		switch {
		case err == nil:
			ok++
		case status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded:
			unavailable++
			if strings.Contains(err.Error(), nodes[1].name) && strings.Contains(err.Error(), "hold data") {
				named++
			}
		default:
			other++
			t.Logf("query while %s is down: %v", nodes[1].name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("queries while %s was down: %d OK, %d UNAVAILABLE (%d naming it as a holder), %d other", nodes[1].name, ok, unavailable, named, other)
	if ok > 0 {
		t.Errorf("%d queries answered OK with a node holding data of the group down", ok)
	}
	if named == 0 {
		t.Errorf("no query named %s as the holder it misses", nodes[1].name)
	}

	c.startDataNode(nodes[1])
	t.Logf("restarted %s", nodes[1].name)
	time.Sleep(faultWindow)
	outs := ld.finish()
	res := ld.verify(conn, outs)
	t.Logf("kill -9 data node, left down: %s", res)
	checkNoLossNoDup(t, res)
}

// queryGroup asks for the first page of the load's stream over all time.
func queryGroup(conn *grpc.ClientConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err := streamv1.NewStreamServiceClient(conn).Query(ctx, &streamv1.QueryRequest{
		Groups: []string{group}, Name: streamName, Limit: 10,
		TimeRange:  &modelv1.TimeRange{Begin: msTimestamp(0), End: msTimestamp(time.Now().Add(time.Hour).UnixMilli())},
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "searchable", Tags: []string{"service"}}}},
	})
	return err
}
