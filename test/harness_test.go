package test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/pkg/run"
)

// testLogger keeps role logs out of the test output unless -v is asked for
// and a test fails.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// runningRole is a role's component group running in the background.
type runningRole struct {
	cancel context.CancelFunc
	done   chan error
}

// startRole runs comps as the command line would and returns once every
// component has started. stop ends it (also at cleanup).
func startRole(t testing.TB, name string, comps []run.Component, ready func() bool) *runningRole {
	t.Helper()
	g := run.NewGroup(run.Config{Name: name, StopTimeout: 20 * time.Second}, testLogger(t), comps...)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningRole{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- g.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		select {
		case err := <-r.done:
			t.Fatalf("%s exited while starting: %v", name, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 30s", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runningRole) stop(t testing.TB) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("role stopped with error: %v", err)
	}
}

// startStandalone runs `banyand standalone` in process on a free port with
// data in dir and returns a client connection to it.
func startStandalone(t *testing.T, dir string) (*grpc.ClientConn, *runningRole) {
	t.Helper()
	return startStandaloneWith(t, dir, false)
}

// startStandaloneWith is startStandalone, keeping top-N rankings as
// writes arrive when topNPre (--topn-pre-aggregation).
func startStandaloneWith(t *testing.T, dir string, topNPre bool) (*grpc.ClientConn, *runningRole) {
	t.Helper()
	var sa roles.Standalone
	sa.SetDefaults("127.0.0.1:0", dir)
	sa.TopNPreAggregation = topNPre
	r := runClientRole(t, "standalone", &sa)
	return dial(t, sa.ClientAddr()), r
}

// role is what the harness needs of a configured role.
type role interface {
	Validate() error
	Components(*slog.Logger) ([]run.Component, error)
}

// runRole validates r, builds its components and starts them (see
// startRole); ready says when it is up.
func runRole(t testing.TB, name string, r role, ready func() bool) *runningRole {
	t.Helper()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	comps, err := r.Components(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return startRole(t, name, comps, ready)
}

// runStorage starts a configured data node and returns once its cluster
// port listens.
func runStorage(t testing.TB, s *roles.Storage) *runningRole {
	t.Helper()
	return runRole(t, s.NodeName, s, func() bool { return s.ClusterAddr() != "" })
}

// runClientRole starts a configured liaison or standalone and returns once
// its client port listens.
// newLiaison is a liaison with defaults, its client API on a free loopback
// port, no HTTP server and etcd at endpoint; callers adjust it, then run it.
func newLiaison(endpoint string) *roles.Liaison {
	l := new(roles.Liaison)
	l.SetDefaults()
	l.SetClientAddr("127.0.0.1:0")
	l.HTTPAddr = ""
	l.Etcd.Endpoints = []string{endpoint}
	return l
}

func runClientRole(t testing.TB, name string, r interface {
	role
	ClientAddr() string
}) *runningRole {
	t.Helper()
	return runRole(t, name, r, func() bool { return r.ClientAddr() != "" })
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
