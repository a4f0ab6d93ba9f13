package test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
)

// cluster is an in-process cluster: embedded etcd, data nodes and
// liaisons, each built by the same role constructors the commands use.
type cluster struct {
	t        *testing.T
	etcd     *etcdtest.Server
	dataDirs []string
	data     []*runningRole
	liaisons []*grpc.ClientConn
}

func startCluster(t *testing.T, dataNodes, liaisons int) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: etcdtest.Start(t)}
	for i := range dataNodes {
		c.dataDirs = append(c.dataDirs, t.TempDir())
		c.data = append(c.data, c.startDataNode(i))
	}
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
	if err := s.Validate(); err != nil {
		c.t.Fatal(err)
	}
	comps, err := s.Components(testLogger(c.t))
	if err != nil {
		c.t.Fatal(err)
	}
	return startRole(c.t, s.NodeName, comps, func() bool { return s.ClusterAddr() != "" })
}

func (c *cluster) startLiaison() *grpc.ClientConn {
	c.t.Helper()
	var l roles.Liaison
	l.SetDefaults()
	l.SetClientAddr("127.0.0.1:0")
	l.HTTPAddr = ""
	l.Etcd.Endpoints = []string{c.etcd.Endpoint()}
	if err := l.Validate(); err != nil {
		c.t.Fatal(err)
	}
	comps, err := l.Components(testLogger(c.t))
	if err != nil {
		c.t.Fatal(err)
	}
	startRole(c.t, "liaison", comps, func() bool { return l.ClientAddr() != "" })
	return dial(c.t, l.ClientAddr())
}

func TestClusterStreamRoundTrip(t *testing.T) {
	c := startCluster(t, 2, 1)
	createStreamSchema(t, c.liaisons[0], 4)
	checkStreamRoundTrip(t, c.liaisons[0], 500, 50)
}
