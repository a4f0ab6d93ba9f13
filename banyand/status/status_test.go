package status

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/metrics"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/route"
)

// add counts n on c, as n write messages would.
func add(c interface{ Inc() }, n int) {
	for range n {
		c.Inc()
	}
}

func regNode(name, addr string, roles ...databasev1.Role) *databasev1.Node {
	return &databasev1.Node{Metadata: &commonv1.Metadata{Name: name}, Roles: roles, GrpcAddress: addr, HttpAddress: addr + "-http"}
}

// The status page shows every node with its health as the publisher sees
// it, each group's shard placement, write rates over the last sample
// interval and error counts by status, all HTML-escaped.
func TestStatusPage(t *testing.T) {
	data := databasev1.Role_ROLE_DATA
	nodes := []*databasev1.Node{
		regNode("data-a", "10.0.0.1:17914", data),
		regNode("data-b", "10.0.0.2:17914", data),
		regNode("data-<c>", "10.0.0.3:17914", data),
	}
	stats := pub.Stats{UnderReplicated: 42, Nodes: []pub.NodeStats{
		{Name: "data-a", Addr: "10.0.0.1:17914", InFlightBatches: 3, BytesInUse: 4096},
		{Name: "data-b", Addr: "10.0.0.2:17914", Down: true},
		{Name: "data-gone", Addr: "10.0.0.9:17914", InFlightBatches: 1},
	}}
	table, err := route.NewTable(1, []route.Node{{Name: "data-a"}, {Name: "data-b"}},
		[]route.Group{{Name: "sw_metric", ShardNum: 2}, {Name: "empty<g>", ShardNum: 1, Replicas: 1}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	wc := metrics.NewWriteCounters(reg)
	p := New(Sources{
		Self: func() Node {
			return Node{Name: "liaison-1", Roles: "liaison", GRPCAddr: "127.0.0.1:17912", HTTPAddr: "127.0.0.1:17913", Health: "ready"}
		},
		Nodes:    func() []*databasev1.Node { return nodes },
		PubStats: func() pub.Stats { return stats },
		Table:    func() *route.Table { return table },
		Writes:   reg,
		Hinted: func() map[string]map[string][]uint32 {
			return map[string]map[string][]uint32{"empty<g>": {"data-b": {0}, "data-a": {0, 3}}}
		},
	})

	t0 := time.Unix(1_700_000_000, 0)
	p.sample(t0)
	add(wc.Received("sw_metric", "measure"), 50)
	add(wc.Answered("sw_metric", "measure", modelv1.Status_STATUS_SUCCEED), 40)
	add(wc.Answered("sw_metric", "measure", modelv1.Status_STATUS_INVALID_ARGUMENT), 10)
	add(wc.Received("sw_property", "property"), 5) // property Apply and Delete calls
	add(wc.Answered("sw_property", "property", modelv1.Status_STATUS_SUCCEED), 5)
	add(wc.Received("sw_trace", "trace"), 15) // spans
	add(wc.Answered("sw_trace", "trace", modelv1.Status_STATUS_SUCCEED), 15)
	p.sample(t0.Add(Interval))
	add(wc.Received("sw_metric", "measure"), 7) // after the sample: in the total, not the rate

	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`<meta http-equiv="refresh" content="5">`,
		"liaison-1", "127.0.0.1:17912",
		// nodes with the publisher's view of them
		`<td>data-a</td><td>data</td><td>10.0.0.1:17914</td><td>10.0.0.1:17914-http</td><td class="connected">connected</td><td class="num">3</td><td class="num">4096</td>`,
		`<td>data-b</td><td>data</td><td>10.0.0.2:17914</td><td>10.0.0.2:17914-http</td><td class="down">down</td>`,
		`<td class="not-connected">not connected</td>`,
		`<td>data-gone</td><td>data</td><td>10.0.0.9:17914</td><td></td><td class="leaving">leaving</td>`,
		// placement
		`group <span class="group">sw_metric</span>: 2 shards, 0 replicas`,
		// replication: copies not made, and the nodes keeping hints, sorted
		`could not make for want of live data nodes, since start: 42.`,
		`<p class="error hinted" data-group="empty&lt;g&gt;">Hints kept, copies still to make: data-a: shards [0 3]; data-b: shards [0]</p>`,
		// rates: 50 received and 10 rejected over 5 s; totals include later writes
		`<td>sw_metric</td><td>measure</td><td class="num">10.0</td><td class="num">57</td>`,
		`<tr class="error"><td>sw_metric</td><td>measure</td><td>STATUS_INVALID_ARGUMENT</td><td class="num">2.0</td><td class="num">10</td>`,
		`<td>STATUS_SUCCEED</td><td class="num">8.0</td><td class="num">40</td>`,
		`<td>sw_property</td><td>property</td><td class="num">1.0</td><td class="num">5</td>`,
		`<td>sw_trace</td><td>trace</td><td class="num">3.0</td><td class="num">15</td>`,
		"over the last 5s",
		// escaping
		"data-&lt;c&gt;", "empty&lt;g&gt;",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "<c>") || strings.Contains(body, "<g>") {
		t.Error("page has unescaped names")
	}
	for shard := range uint32(2) {
		nodes, _ := table.Nodes("sw_metric", shard)
		row := "<tr><td class=\"num\">" + string(rune('0'+shard)) + "</td><td>" + nodes[0].Name + "</td></tr>"
		if !strings.Contains(body, row) {
			t.Errorf("page lacks placement row %s", row)
		}
	}
}

// Before two samples the page shows totals without rates; without the
// cluster sources (standalone) the node and placement sections are absent.
func TestStatusPageStandaloneBeforeSampling(t *testing.T) {
	p := New(Sources{
		Self:   func() Node { return Node{Name: "standalone", Roles: "standalone", Health: "starting"} },
		Writes: prometheus.NewRegistry(),
	})
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body := rec.Body.String()
	if !strings.Contains(body, "not sampled yet") || !strings.Contains(body, "no writes yet") {
		t.Errorf("page before sampling: %s", body)
	}
	if strings.Contains(body, "<h2>Nodes</h2>") || strings.Contains(body, "<h2>Placement</h2>") {
		t.Error("standalone page has cluster sections")
	}
}
