package roles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/banyand/metrics"
	"github.com/banyand-io/banyand/pkg/registry/node"
	"github.com/banyand-io/banyand/pkg/run"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The HTTP endpoints of a role: /healthz while the process runs, /readyz
// only once every component started, /metrics in Prometheus text format.
func TestStandaloneHTTPEndpoints(t *testing.T) {
	var sa Standalone
	sa.SetDefaults("127.0.0.1:0", t.TempDir())
	sa.HTTPAddr = "127.0.0.1:0"
	if err := sa.Validate(); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	comps, err := sa.Components(logger)
	if err != nil {
		t.Fatal(err)
	}
	g := run.NewGroup(run.Config{Name: "standalone"}, logger, comps...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	deadline := time.Now().Add(20 * time.Second)
	for !sa.http.ready.Load() {
		if time.Now().After(deadline) {
			t.Fatal("standalone not ready after 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	base := "http://" + sa.http.Addr()
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d", code)
	}
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d, no go_goroutines in %.200q", code, body)
	}
	for _, name := range []string{"banyand_schema_cache_objects", "banyand_registry_schema_resyncs_total",
		"banyand_storage_engine_wal_bytes_written_total"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics: no %s", name)
		}
	}

	// Ready implies the client port serves: the gRPC server is the last
	// component before the ready marker.
	conn, err := grpc.NewClient(sa.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("client port health once ready: %v %v", hc.GetStatus(), err)
	}
	if code, body := get(t, base+"/status"); code != http.StatusOK || !strings.Contains(body, "banyand standalone") {
		t.Fatalf("/status: %d %.200q", code, body)
	}

	// Draining: the ready marker stops first, so /readyz drops to 503.
	if err := (readyMarker{sa.http}).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining: %d, want 503", code)
	}
}

func TestValidateRejectsBadFlags(t *testing.T) {
	var sa Standalone
	sa.SetDefaults("not-an-address", "")
	err := sa.Validate()
	if err == nil || !strings.Contains(err.Error(), "--grpc-addr") || !strings.Contains(err.Error(), "--data-path") {
		t.Fatalf("Validate: %v, want errors naming --grpc-addr and --data-path", err)
	}
	var st Storage
	st.SetDefaults()
	st.NodeName = "a/b"
	st.NodeTTL = 1500 * time.Millisecond
	err = st.Validate()
	if err == nil || !strings.Contains(err.Error(), "--node-name") || !strings.Contains(err.Error(), "TTL") {
		t.Fatalf("Validate: %v, want errors naming --node-name and the lease TTL", err)
	}
}

// --pprof adds Go's profiles to the HTTP port; without it they are absent,
// since the port has no authentication.
func TestHTTPServerPprofOnlyWhenAsked(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, on := range []bool{false, true} {
		h := newHTTPServer(httpConfig{Addr: "127.0.0.1:0", Pprof: on}, logger, metrics.NewRegistry())
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		code, body := get(t, "http://"+h.Addr()+"/debug/pprof/")
		if err := h.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		switch {
		case on && (code != http.StatusOK || !strings.Contains(body, "goroutine")):
			t.Errorf("--pprof: /debug/pprof/ answered %d %.100q", code, body)
		case !on && code != http.StatusNotFound:
			t.Errorf("no --pprof: /debug/pprof/ answered %d, want 404", code)
		}
	}
}

// takenOnce refuses the first registration as taken, then holds the next
// until ctx ends, as a registrar does while the node stays registered.
type takenOnce struct{ calls atomic.Int32 }

func (r *takenOnce) Register(ctx context.Context, n *databasev1.Node) error {
	if r.calls.Add(1) == 1 {
		return fmt.Errorf("register node %q: %w", n.GetMetadata().GetName(), node.ErrNodeNameTaken)
	}
	<-ctx.Done()
	return nil
}

// A liaison whose name another live registration holds keeps serving and
// registers once it can; a data node stops with the error.
func TestRegistrationRetriesTakenNameOnlyWhenAsked(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	mk := func() *databasev1.Node {
		return &databasev1.Node{Metadata: &commonv1.Metadata{Name: "l1"}, GrpcAddress: "a:1"}
	}

	var data takenOnce
	if err := (&registration{what: "data node", node: mk, registrar: &data, logger: logger}).Serve(context.Background()); !errors.Is(err, node.ErrNodeNameTaken) {
		t.Fatalf("data node: %v, want ErrNodeNameTaken", err)
	}

	var lia takenOnce
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&registration{what: "liaison", retryTaken: time.Millisecond, node: mk, registrar: &lia, logger: logger}).Serve(ctx)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for lia.calls.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the liaison did not register again after its name was taken")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("liaison registration at stop: %v", err)
	}
}
