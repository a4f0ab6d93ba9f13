package test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
)

// metrics is one scrape of a /metrics page: series (name{labels}) to value.
type metrics map[string]float64

func scrape(t *testing.T, addr string) metrics {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// sum adds the series of name whose labels include every one of labels
// (each `key="value"`); found is false when there is none.
func (m metrics) sum(name string, labels ...string) (total float64, found bool) {
	for series, v := range m {
		n, rest, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
			}
		}
		if ok {
			total += v
			found = true
		}
	}
	return total, found
}

func (m metrics) want(t *testing.T, what string, cond func(float64) bool, name string, labels ...string) {
	t.Helper()
	v, ok := m.sum(name, labels...)
	if !ok {
		t.Errorf("%s: no series %s%v", what, name, labels)
		return
	}
	if !cond(v) {
		t.Errorf("%s: %s%v = %v", what, name, labels, v)
	}
}

func exists(float64) bool     { return true }
func positive(v float64) bool { return v > 0 }
func atLeast(n float64) func(float64) bool {
	return func(v float64) bool { return v >= n }
}

// The operator's view of a write: after writes through a liaison, its
// /metrics and the data node's count them.
func TestClusterMetrics(t *testing.T) {
	etcdSrv := etcdtest.Start(t)

	var s roles.Storage
	s.SetDefaults()
	s.GRPCAddr, s.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	s.DataPath, s.NodeName, s.NodeTTL = t.TempDir(), "data-0", 2*time.Second
	s.Etcd.Endpoints = []string{etcdSrv.Endpoint()}
	runStorage(t, &s)

	l := newLiaison(etcdSrv.Endpoint())
	l.HTTPAddr = "127.0.0.1:0"
	runClientRole(t, "liaison", l)
	conn := dial(t, l.ClientAddr())

	const n = 300
	createStreamSchema(t, conn, 2)
	checkStreamRoundTrip(t, conn, n, 30)

	group := `group="` + streamGroup + `"`
	// The answered counter is bumped after the answer is sent.
	var lm metrics
	poll.Within(t, 10*time.Second, "every answer counted", func() bool {
		lm = scrape(t, l.HTTPBoundAddr())
		v, _ := lm.sum("banyand_liaison_writes_answered_total", group, `kind="stream"`, `status="STATUS_SUCCEED"`)
		return v == n
	})
	lm.want(t, "writes received", func(v float64) bool { return v == n }, "banyand_liaison_writes_received_total", group, `kind="stream"`)
	lm.want(t, "publisher messages", atLeast(n), "banyand_publisher_messages_sent_total")
	lm.want(t, "publisher batches", positive, "banyand_publisher_batches_sent_total")
	lm.want(t, "publisher bound", positive, "banyand_publisher_max_bytes_per_node")
	lm.want(t, "schema events", positive, "banyand_registry_events_total", `registry="schema"`, `type="put"`)
	lm.want(t, "node events", atLeast(1), "banyand_registry_events_total", `registry="node"`)
	lm.want(t, "batch size histogram", positive, "banyand_publisher_batch_messages_count")
	lm.want(t, "messages in the batch size histogram", atLeast(n), "banyand_publisher_batch_messages_sum")
	lm.want(t, "ack latency histogram", positive, "banyand_publisher_ack_latency_seconds_count", `node="data-0"`)
	lm.want(t, "ack latency total", positive, "banyand_publisher_ack_latency_seconds_sum", `node="data-0"`)
	for _, name := range []string{"banyand_publisher_bytes_in_use", "banyand_publisher_reconnects_total",
		"banyand_publisher_replaced_messages_total", "banyand_publisher_under_replicated_copies_total",
		"banyand_registry_schema_resyncs_total", "banyand_registry_schema_skipped_total",
		"banyand_registry_node_watch_skipped_total", "banyand_registry_node_watch_relists_total"} {
		lm.want(t, "liaison", exists, name)
	}
	lm.want(t, "node in flight", exists, "banyand_publisher_node_inflight_batches", `node="data-0"`)
	lm.want(t, "node bytes", exists, "banyand_publisher_node_bytes_in_use", `node="data-0"`)
	lm.want(t, "cached groups", atLeast(1), "banyand_schema_cache_objects", `kind="group"`)
	lm.want(t, "cached streams", atLeast(1), "banyand_schema_cache_objects", `kind="stream"`)
	lm.want(t, "gRPC write streams", positive, "banyand_grpc_server_handled_total", `grpc_method="Write"`, `grpc_service="banyandb.stream.v1.StreamService"`)

	dm := scrape(t, s.HTTPBoundAddr())
	topic := `topic="stream-write"`
	dm.want(t, "messages received", atLeast(n), "banyand_subscriber_messages_received_total", topic)
	dm.want(t, "batches received", positive, "banyand_subscriber_batches_received_total", topic)
	dm.want(t, "query batches", positive, "banyand_subscriber_batches_received_total", `topic="stream-query"`)
	dm.want(t, "commits", positive, "banyand_storage_commit_duration_seconds_count", topic)
	dm.want(t, "bytes written", positive, "banyand_storage_written_bytes_total", topic)
	dm.want(t, "registrations", atLeast(1), "banyand_registry_node_registrations_total")
	dm.want(t, "renewals", exists, "banyand_registry_node_renewals_total")
	dm.want(t, "losses", func(v float64) bool { return v == 0 }, "banyand_registry_node_losses_total")
	dm.want(t, "data node schema", atLeast(1), "banyand_schema_cache_objects", `kind="group"`)
	if _, ok := dm.sum("banyand_subscriber_failures_total"); ok {
		t.Errorf("failures counted for writes that all succeeded")
	}

	// Writes naming thousands of groups that do not exist are counted
	// under one label: client input cannot grow the series without bound.
	const unknown = 2000
	reqs := make([]*streamv1.WriteRequest, unknown)
	for i := range reqs {
		reqs[i] = &streamv1.WriteRequest{Metadata: &commonv1.Metadata{Group: fmt.Sprintf("nope-%d", i), Name: streamName},
			Element: testElement(i, 7), MessageId: uint64(i + 1)}
	}
	resps, err := sendStream(t, conn, reqs)
	if err != nil || len(resps) != unknown {
		t.Fatalf("unknown-group writes: %d answers, %v", len(resps), err)
	}
	for _, r := range resps {
		if r.GetStatus() != modelv1.Status_STATUS_NOT_FOUND.String() {
			t.Fatalf("write to a missing group answered %s", r.GetStatus())
		}
	}
	unknownGroup := `group="_unknown"`
	poll.Within(t, 10*time.Second, "every unknown-group answer counted", func() bool {
		lm = scrape(t, l.HTTPBoundAddr())
		v, _ := lm.sum("banyand_liaison_writes_answered_total", unknownGroup, `status="STATUS_NOT_FOUND"`)
		return v == unknown
	})
	lm.want(t, "unknown-group writes received", func(v float64) bool { return v == unknown }, "banyand_liaison_writes_received_total", unknownGroup)
	for _, name := range []string{"banyand_liaison_writes_received_total", "banyand_liaison_writes_answered_total"} {
		if n := lm.series(name); n > 3 {
			t.Errorf("%s has %d series after writes to %d unknown groups, want at most 3", name, n, unknown)
		}
	}

	// Property Apply and Delete count as writes of kind "property", and
	// the data node times their commits like the other write topics.
	createPropertySchema(t, conn, 1, 0)
	pc := propertyv1.NewPropertyServiceClient(conn)
	for _, id := range []string{"a", "b"} {
		if _, err := pc.Apply(ctxT(t), &propertyv1.ApplyRequest{Property: newProperty(propGroup, propName, id, propInt("level", 1))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pc.Delete(ctxT(t), &propertyv1.DeleteRequest{Group: propGroup, Name: propName, Id: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Apply(ctxT(t), &propertyv1.ApplyRequest{Property: newProperty(propGroup, "nope", "a", propInt("level", 1))}); status.Code(err) != codes.NotFound {
		t.Fatalf("apply to a missing property schema: %v", err)
	}
	lm = scrape(t, l.HTTPBoundAddr())
	pg, kind := `group="`+propGroup+`"`, `kind="property"`
	lm.want(t, "property writes received", func(v float64) bool { return v == 4 }, "banyand_liaison_writes_received_total", pg, kind)
	lm.want(t, "property writes answered", func(v float64) bool { return v == 3 }, "banyand_liaison_writes_answered_total", pg, kind, `status="STATUS_SUCCEED"`)
	lm.want(t, "property writes refused", func(v float64) bool { return v == 1 }, "banyand_liaison_writes_answered_total", pg, kind, `status="STATUS_NOT_FOUND"`)
	dm = scrape(t, s.HTTPBoundAddr())
	dm.want(t, "property commits", atLeast(3), "banyand_storage_commit_duration_seconds_count", `topic="property-write"`)

	// Spans count as writes of kind "trace", and the data node times
	// their commits.
	createTraceSchema(t, conn, 1, 0)
	spans := []*oapTraceWrite{oapSegment(traceGroup, 1, 0, time.Now()), oapSegment(traceGroup, 1, 1, time.Now())}
	res, err := flushTraces(conn, spans)
	checkFlush(t, "spans", res, err, len(spans))
	lm = scrape(t, l.HTTPBoundAddr())
	tg := `group="` + traceGroup + `"`
	kind = `kind="trace"`
	lm.want(t, "spans received", func(v float64) bool { return v == 2 }, "banyand_liaison_writes_received_total", tg, kind)
	lm.want(t, "spans answered", func(v float64) bool { return v == 2 }, "banyand_liaison_writes_answered_total", tg, kind, `status="STATUS_SUCCEED"`)
	dm = scrape(t, s.HTTPBoundAddr())
	dm.want(t, "trace commits", atLeast(1), "banyand_storage_commit_duration_seconds_count", `topic="trace-write"`)
}

// series counts the series of name.
func (m metrics) series(name string) int {
	n := 0
	for s := range m {
		if base, _, _ := strings.Cut(s, "{"); base == name {
			n++
		}
	}
	return n
}
