//go:build unix

package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"
	"github.com/banyand-io/banyand/pkg/route"
)

// requireBrowserEnv makes a missing browser a failure rather than a skip;
// .ci/run sets it once chromium is installed.
const requireBrowserEnv = "BANYAND_REQUIRE_BROWSER"

// findChromium returns Debian's chromium binary, skipping the test (or
// failing it under BANYAND_REQUIRE_BROWSER=1) when there is none.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(requireBrowserEnv) == "1" {
		t.Fatalf("no chromium or chromium-browser on PATH and %s=1", requireBrowserEnv)
	}
	t.Skip("no chromium on PATH (apt-get install chromium); set " + requireBrowserEnv + "=1 to fail instead")
	return ""
}

// dumpDOM loads url in headless chromium and returns the DOM after load.
// The browser and every process it started are killed at the deadline.
func dumpDOM(t *testing.T, bin, url string, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// chromium's helpers may outlive it in its process group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("chromium did not finish loading %s within %s; stderr:\n%s", url, limit, tail(stderr.String(), 2000))
		}
		t.Fatalf("chromium --dump-dom %s: %v; stderr:\n%s", url, err, tail(stderr.String(), 2000))
	}
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// The operator's view of a cluster in a real browser: after writes through
// a liaison, its status page lists every data node by name and address as
// connected, the other liaisons, and each shard of the group on the node
// the placement puts it.
func TestStatusPageInBrowser(t *testing.T) {
	bin := findChromium(t)
	etcdSrv := etcdtest.Start(t)

	var dataNodes []route.Node
	for i := range 2 {
		var s roles.Storage
		s.SetDefaults()
		s.GRPCAddr, s.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
		s.DataPath, s.NodeName, s.NodeTTL = t.TempDir(), fmt.Sprintf("data-%d", i), 2*time.Second
		s.Etcd.Endpoints = []string{etcdSrv.Endpoint()}
		runStorage(t, &s)
		dataNodes = append(dataNodes, route.Node{Name: s.NodeName, Addr: s.ClusterAddr()})
	}

	l := newLiaison(etcdSrv.Endpoint())
	l.HTTPAddr = "127.0.0.1:0"
	l.NodeName = "liaison-browser"
	runClientRole(t, "liaison", l)
	conn := dial(t, l.ClientAddr())

	const shards = 4
	createStreamSchema(t, conn, shards)
	checkStreamRoundTrip(t, conn, 100, 10)

	// Both nodes were written to, so the publisher holds a connection to
	// each; wait until the page says so before starting a browser.
	url := "http://" + l.HTTPBoundAddr() + "/status"
	poll.Within(t, 10*time.Second, "both data nodes connected on the status page", func() bool {
		page := httpGet(t, url)
		return strings.Count(page, `class="connected">connected<`) == len(dataNodes)
	})

	// A second liaison registers too, and the first one's page lists it;
	// the page's own liaison stays a single row.
	l2 := newLiaison(etcdSrv.Endpoint())
	l2.NodeName = "liaison-two"
	runClientRole(t, "liaison", l2)
	otherRow := `<td>liaison-two</td><td>liaison</td><td>` + l2.ClientAddr() + `</td>`
	poll.Within(t, 10*time.Second, "the other liaison on the status page", func() bool {
		return strings.Contains(httpGet(t, url), otherRow)
	})

	dom := dumpDOM(t, bin, url, 60*time.Second)
	if n := strings.Count(dom, "<td>liaison-browser</td>"); n != 1 {
		t.Errorf("the page's own liaison is in %d rows, want 1", n)
	}
	want := []string{"liaison-browser", l.ClientAddr(), `content="5"`, otherRow}
	for _, n := range dataNodes {
		want = append(want, `<td>`+n.Name+`</td><td>data</td><td>`+n.Addr+`</td>`)
	}
	// The placement every liaison computes from the same nodes and group.
	table, err := route.NewTable(1, dataNodes, []route.Group{{Name: streamGroup, ShardNum: shards}})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, fmt.Sprintf(`group <span class="group">%s</span>: %d shards, 0 replicas`, streamGroup, shards))
	for s := range uint32(shards) {
		nodes, err := table.Nodes(streamGroup, s)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf(`<tr><td class="num">%d</td><td>%s</td></tr>`, s, nodes[0].Name))
	}
	want = append(want, `<td>`+streamGroup+`</td><td>stream</td>`, `<td>STATUS_SUCCEED</td>`)
	for _, w := range want {
		if !strings.Contains(dom, w) {
			t.Errorf("DOM lacks %s", w)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}
