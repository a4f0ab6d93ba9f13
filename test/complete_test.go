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
	"github.com/banyand-io/banyand/internal/poll"
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
