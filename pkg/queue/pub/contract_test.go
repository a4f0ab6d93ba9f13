package pub_test

import (
	"testing"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/queuetest"
	"github.com/banyand-io/banyand/pkg/route"
)

// TestContract runs the shared queue contract against a pub client
// publishing to a real sub server over loopback gRPC.
func TestContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) (queue.Client, queue.Server) {
		n := startNode(t, "data-1", false, nil)
		r := route.NewRouter()
		if _, err := r.Update([]route.Node{n.routeNode()},
			[]route.Group{{Name: queuetest.Group, ShardNum: 4}}); err != nil {
			t.Fatal(err)
		}
		return newClient(t, fastConfig(), r), n.srv
	})
}
