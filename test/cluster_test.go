package test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/storage"

	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/etcd"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
)

// cluster is an in-process cluster: embedded etcd, data nodes and
// liaisons, each built by the same role constructors the commands use.
type cluster struct {
	t        testing.TB
	etcd     *etcdtest.Server
	dataDirs []string
	data     []*runningRole
	liaisons []*grpc.ClientConn
	// topNPre: the nodes keep and read top-N rankings (--topn-pre-aggregation).
	topNPre bool
}

func startCluster(t testing.TB, dataNodes, liaisons int) *cluster {
	t.Helper()
	return startClusterWith(t, dataNodes, liaisons, false)
}

// startClusterWith is startCluster, its nodes keeping and reading top-N
// rankings when topNPre.
func startClusterWith(t testing.TB, dataNodes, liaisons int, topNPre bool) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: etcdtest.Start(t), topNPre: topNPre}
	for i := range dataNodes {
		c.dataDirs = append(c.dataDirs, t.TempDir())
		c.data = append(c.data, c.startDataNode(i))
	}
	c.waitRegistered(dataNodes)
	for range liaisons {
		c.liaisons = append(c.liaisons, c.startLiaison())
	}
	return c
}

func (c *cluster) startDataNode(i int) *runningRole {
	c.t.Helper()
	var s roles.Storage
	s.SetDefaults()
	s.GRPCAddr = "127.0.0.1:0"
	s.HTTPAddr = ""
	s.DataPath = c.dataDirs[i]
	s.NodeName = fmt.Sprintf("data-%d", i)
	s.NodeTTL = 2 * time.Second
	s.Etcd.Endpoints = []string{c.etcd.Endpoint()}
	s.TopNPreAggregation = c.topNPre
	return runStorage(c.t, &s)
}

// waitRegistered waits until n data nodes are registered, so a liaison
// started next routes to all of them from its first snapshot.
func (c *cluster) waitRegistered(n int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := etcd.WaitForNodes(ctx, etcd.NodeConfig{}, c.etcd.Client(), n); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) startLiaison() *grpc.ClientConn {
	c.t.Helper()
	l := newLiaison(c.etcd.Endpoint())
	l.TopNPreAggregation = c.topNPre
	runClientRole(c.t, "liaison", l)
	return dial(c.t, l.ClientAddr())
}

func TestClusterStreamRoundTrip(t *testing.T) {
	c := startCluster(t, 2, 1)
	createStreamSchema(t, c.liaisons[0], 4)
	checkStreamRoundTrip(t, c.liaisons[0], 500, 50)
}

func TestClusterMeasureRoundTrip(t *testing.T) {
	c := startCluster(t, 2, 1)
	createMeasureSchema(t, c.liaisons[0], 4)
	checkMeasureRoundTrip(t, c.liaisons[0], 400, 40)
}

// Both data nodes receive data, and together hold each write exactly once.
func TestClusterSpreadsShardsOverDataNodes(t *testing.T) {
	c := startCluster(t, 2, 1)
	createStreamSchema(t, c.liaisons[0], 4)
	checkStreamRoundTrip(t, c.liaisons[0], 400, 100)
	for i := range c.data {
		c.data[i].stop(t)
	}
	total := 0
	for i, dir := range c.dataDirs {
		n := countOffline(t, dir)
		t.Logf("data node %d holds %d elements", i, n)
		if n == 0 {
			t.Errorf("data node %d received no data", i)
		}
		total += n
	}
	if total != 400 {
		t.Fatalf("data nodes hold %d elements together, want 400", total)
	}
}

// A schema created through one liaison is usable through another.
func TestClusterSchemaSharedBetweenLiaisons(t *testing.T) {
	c := startCluster(t, 1, 2)
	createStreamSchema(t, c.liaisons[0], 2)
	md := &commonv1.Metadata{Group: streamGroup, Name: streamName}
	// The second liaison learns of the schema through its etcd watch.
	poll.Within(t, 10*time.Second, "schema visible on the second liaison", func() bool {
		st := writeStream(t, c.liaisons[1], []*streamv1.WriteRequest{{Metadata: md, Element: testElement(1, 3), MessageId: 1}})
		return st[1] == modelv1.Status_STATUS_SUCCEED.String()
	})
	if n := len(queryAllStream(t, c.liaisons[0], 10)); n != 1 {
		t.Fatalf("first liaison reads %d elements, want 1", n)
	}
}

// A data node stopped during writes loses nothing acknowledged: every write
// is either acknowledged and readable, or answered with an error status.
// Restarted, the node rejoins and receives writes again.
func TestClusterDataNodeStopAndRejoin(t *testing.T) {
	c := startCluster(t, 2, 1)
	conn := c.liaisons[0]
	createStreamSchema(t, conn, 4)
	md := &commonv1.Metadata{Group: streamGroup, Name: streamName}

	const perRound, rounds = 100, 10
	acked := map[string]bool{}
	failed := 0
	next := 0
	write := func() {
		reqs := make([]*streamv1.WriteRequest, perRound)
		for j := range reqs {
			reqs[j] = &streamv1.WriteRequest{Metadata: md, Element: testElement(next, 50), MessageId: uint64(j + 1)}
			next++
		}
		st := writeStream(t, conn, reqs)
		for j, r := range reqs {
			switch st[uint64(j+1)] {
			case modelv1.Status_STATUS_SUCCEED.String():
				acked[answeredID(r.GetElement().GetElementId())] = true
			case "":
				t.Fatalf("message %d got no answer", j+1)
			default:
				failed++
			}
		}
	}
	for round := range rounds {
		if round == rounds/2 {
			c.data[1].stop(t)
		}
		write()
	}
	t.Logf("with a node stopped mid-way: %d acked, %d failed", len(acked), failed)
	if len(acked) < perRound*rounds/2 {
		t.Fatalf("only %d writes acked: writes did not continue on the surviving node", len(acked))
	}

	// Rejoin: same name and data directory. Without replicas, what the
	// stopped node holds is unavailable while it is down and readable again
	// once it is back; nothing acknowledged is lost.
	c.data[1] = c.startDataNode(1)
	checkAllReadable := func() bool {
		readable := map[string]bool{}
		els, err := tryQueryAllStream(t, conn, uint32(next+10))
		if status.Code(err) == codes.Unavailable {
			return false // the liaison has not seen the node back yet
		}
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		for _, el := range els {
			readable[el.GetElementId()] = true
		}
		for id := range acked {
			if !readable[id] {
				t.Logf("acknowledged element %s not readable yet", id)
				return false
			}
		}
		return true
	}
	poll.Within(t, 15*time.Second, "every acknowledged write readable after the node rejoined", checkAllReadable)

	// The rejoined node takes new writes again.
	before := next
	write()
	c.data[1].stop(t)
	if n := countOfflineFrom(t, c.dataDirs[1], before); n == 0 {
		t.Fatal("the restarted data node received none of the writes after it rejoined")
	}
}

// countOffline opens a stopped data node's store and counts its elements.
func countOffline(t *testing.T, dataPath string) int { return countOfflineFrom(t, dataPath, 0) }

// countOfflineFrom counts the elements with index >= from.
func countOfflineFrom(t *testing.T, dataPath string, from int) int {
	t.Helper()
	s := storage.New(storage.Config{Dir: filepath.Join(dataPath, "storage")}, nil, testLogger(t))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	schema := &databasev1.Stream{}
	resp, err := s.QueryStream(context.Background(), &clusterv1.StreamQuery{
		Request: &streamv1.QueryRequest{
			Groups: []string{streamGroup}, Name: streamName, Limit: 100_000, // the most a query may ask
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
		},
		Schema: schema,
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, el := range resp.GetElements() {
		var i int
		if _, err := fmt.Sscanf(el.GetElementId(), "el-%d", &i); err == nil && i >= from {
			n++
		}
	}
	return n
}

// With replicas = 1 every write is durable on two data nodes before it is
// acknowledged, so stopping one node leaves everything readable at once.
func TestClusterReplicasKeepDataReadableWhenANodeStops(t *testing.T) {
	c := startCluster(t, 3, 1)
	createReplicatedStreamSchema(t, c.liaisons[0], 4, 1)
	checkStreamRoundTrip(t, c.liaisons[0], 300, 60)
	c.data[0].stop(t)
	poll.Within(t, 15*time.Second, "all 300 elements readable with one of three nodes stopped", func() bool {
		return len(queryAllStream(t, c.liaisons[0], 400)) == 300
	})
	for i := 1; i < 3; i++ {
		c.data[i].stop(t)
	}
	total := 0
	for _, dir := range c.dataDirs {
		total += countOffline(t, dir)
	}
	if total != 600 {
		t.Fatalf("the three nodes hold %d copies, want 600 (two per element)", total)
	}
}
