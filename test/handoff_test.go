package test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/banyand-io/banyand/internal/poll"
)

// hintedMarks lists the hinted marks (holder records ending in /hinted)
// of node in etcd.
func (c *cluster) hintedMarks(node string) []string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.etcd.Client().Get(ctx, "", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); strings.Contains(k, "/holders/"+node+"/") && strings.HasSuffix(k, "/hinted") {
			out = append(out, k)
		}
	}
	return out
}

// A write acked with one of its two copies, the other node being away,
// leaves a hint with the node that took it, marked in the registry. Once
// the other node is back the hint is handed off and the mark cleared, so
// the returned node alone answers every acked write.
func TestClusterHintedHandoffMakesTheMissingCopies(t *testing.T) {
	c := startCluster(t, 2, 1)
	conn := c.liaisons[0]
	createReplicatedStreamSchema(t, conn, 4, 1)
	c.data[1].stop(t)

	const n = 200
	checkStreamRoundTrip(t, conn, n, 40) // every write acked: one copy and a hint each
	if marks := c.hintedMarks("data-0"); len(marks) == 0 {
		t.Fatal("writes acked with one of two copies left no hinted mark")
	}

	c.data[1] = c.startDataNode(1)
	poll.Within(t, 30*time.Second, "data-0's hints handed off and its marks cleared", func() bool {
		return len(c.hintedMarks("data-0")) == 0
	})
	c.data[0].stop(t)
	poll.Within(t, 20*time.Second, "every acked write read from data-1 alone", func() bool {
		els, err := tryQueryAllStream(t, conn, n+10)
		if err != nil {
			return false // data-0 still in the table, asked and gone
		}
		if len(els) != n {
			t.Fatalf("query answered OK with %d of %d acknowledged elements from data-1", len(els), n)
		}
		return true
	})
}
