//go:build faults

package faults

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/pauseproxy"
)

const (
	// warmAcks is how many writes are acknowledged before a fault.
	warmAcks = 3000
	// faultWindow is how long the load keeps running with the fault in
	// place, and again after the recovery: a load phase, not a wait for
	// a condition.
	faultWindow = 3 * time.Second
	// startupAcks bounds how long the first acknowledgements may take.
	startupAcks = 30 * time.Second
)

// A data node is killed with SIGKILL under load and restarted with the
// same name and data path. Writes go on on the survivor; nothing
// acknowledged is lost, nothing is read twice.
func TestKillDataNodeUnderLoad(t *testing.T) {
	u := startUnderLoad(t)
	conn, ld := u.conn, u.ld
	killedAt, restartAt, outs := killAndRestart(t, u.c, u.nodes[1], ld)

	res := ld.verify(conn, outs)
	t.Logf("kill -9 data node: %s", res)
	survivor, err := ackedBetween(outs, killedAt, restartAt)
	t.Logf("writes sent after the kill and acknowledged before the restart: %d", survivor)
	if err != nil {
		t.Errorf("no write succeeded on the survivor while %s was down", u.nodes[1].name)
	}
	checkNoLossNoDup(t, res)
}

// killAndRestart kills node with SIGKILL under ld, lets the load run
// faultWindow, restarts it with the same name and data path, lets the load
// run faultWindow more and finishes it.
func killAndRestart(t *testing.T, c *cluster, node *dataNode, ld *load) (killedAt, restartAt time.Time, outs []outcome) {
	t.Helper()
	killedAt = time.Now()
	node.p.kill()
	t.Logf("killed %s (SIGKILL) after %d acks", node.name, ld.acked.Load())
	time.Sleep(faultWindow)
	restartAt = time.Now()
	c.startDataNode(node)
	t.Logf("restarted %s (same name and data path) in %s", node.name, time.Since(restartAt).Round(time.Millisecond))
	time.Sleep(faultWindow)
	return killedAt, restartAt, ld.finish()
}

// The liaison is killed with SIGKILL under load and a new one started on
// the same address; the client reconnects. Every write the client saw
// acknowledged is readable, once.
func TestKillLiaisonUnderLoad(t *testing.T) {
	u := startUnderLoad(t)
	c, lia, conn, ld := u.c, u.lia, u.conn, u.ld
	lia.p.kill()
	t.Logf("killed the liaison (SIGKILL) after %d acks", ld.acked.Load())
	restartAt := time.Now()
	c.startLiaison(lia)
	t.Logf("new liaison serving in %s", time.Since(restartAt).Round(time.Millisecond))
	time.Sleep(faultWindow)
	outs := ld.finish()

	res := ld.verify(conn, outs)
	t.Logf("kill -9 liaison: %s (write streams opened: %d)", res, ld.opened.Load())
	after, err := ackedBetween(outs, restartAt, time.Now())
	t.Logf("writes acknowledged by the new liaison: %d", after)
	if err != nil {
		t.Error("no write succeeded through the new liaison")
	}
	checkNoLossNoDup(t, res)
}

func checkNoLossNoDup(t *testing.T, res counts) {
	t.Helper()
	if res.lost != 0 {
		t.Errorf("%d acknowledged writes are not readable (seqs, first ones: %v)", res.lost, res.lostSample)
	}
	if res.duplicates != 0 {
		t.Errorf("queries returned %d duplicate elements", res.duplicates)
	}
	if res.readable < res.acked {
		t.Errorf("readable %d < acked %d", res.readable, res.acked)
	}
}

// etcdOutage is how long etcd is stopped under load.
const etcdOutage = 10 * time.Second

// etcd is stopped (SIGSTOP) for etcdOutage under load, then continued.
// The liaison keeps writing to the data nodes it knows; afterwards both
// data nodes are registered again; no write fails and nothing
// acknowledged is lost.
func TestEtcdStoppedUnderLoad(t *testing.T) {
	u := startUnderLoad(t)
	c, conn, ld := u.c, u.conn, u.ld
	before := waitRegistered(t, c.etcd, readyTimeout, "data-0", "data-1")
	stoppedAt := time.Now()
	c.etcdP.signal(t, syscall.SIGSTOP)
	t.Logf("stopped etcd (SIGSTOP) after %d acks", ld.acked.Load())
	time.Sleep(etcdOutage)
	resumedAt := time.Now()
	c.etcdP.signal(t, syscall.SIGCONT)
	after := waitRegistered(t, c.etcd, readyTimeout, "data-0", "data-1")
	t.Logf("etcd continued; both data nodes registered %s later (key create revisions before %v, after %v)",
		time.Since(resumedAt).Round(time.Millisecond), before, after)
	time.Sleep(faultWindow)
	outs := ld.finish()

	res := ld.verify(conn, outs)
	t.Logf("etcd stopped %s: %s", etcdOutage, res)
	during, err := ackedBetween(outs, stoppedAt, resumedAt)
	t.Logf("writes sent and acknowledged while etcd was stopped: %d", during)
	if err != nil {
		t.Error("no write was acknowledged while etcd was stopped")
	}
	if _, err := ackedBetween(outs, resumedAt, time.Now()); err != nil {
		t.Error("no write was acknowledged after etcd continued")
	}
	failedDuring, failedAfter := failedBetween(outs, stoppedAt, resumedAt), failedBetween(outs, resumedAt, time.Now())
	t.Logf("writes with an error status answered while etcd was stopped: %d, after it continued: %d", failedDuring, failedAfter)
	// The nodes' leases expire as etcd continues, so the liaison sees no
	// node for the few ms they take to register again; writes wait for
	// them (up to --queue-retry-budget) rather than fail.
	if failedDuring+failedAfter > 0 {
		t.Errorf("%d writes failed across the outage; want 0 (they should wait for the nodes)", failedDuring+failedAfter)
	}
	checkNoLossNoDup(t, res)
}

// pauseWindow is how long a data node's traffic is held by its proxy: more
// than the publisher's stall timeout (5 s) plus the retry budget set below.
const pauseWindow = 10 * time.Second

// A data node's traffic is paused by a proxy (connections stay open, no
// byte moves) under load. After the stall timeout and the retry budget its
// writes are re-placed on the other node and acknowledged while the pause
// lasts; nothing acknowledged is lost, nothing is read twice.
func TestPausedDataNodeUnderLoad(t *testing.T) {
	c := newCluster(t)
	c.newDataNode(0)
	d1 := c.dataNodeSpec(1)
	px := pauseproxy.Start(t, d1.addr)
	d1.args = []string{"--advertise-addr", px.Addr()}
	c.startDataNode(d1)
	lia := c.newLiaison("--queue-retry-budget", "1s")
	conn := readyConn(t, lia.addr)

	ld := startWarmLoad(t, conn)
	pausedAt := time.Now()
	px.Pause()
	t.Logf("paused the proxy of %s after %d acks", d1.name, ld.acked.Load())
	time.Sleep(pauseWindow)
	resumedAt := time.Now()
	px.Resume()
	time.Sleep(faultWindow)
	outs := ld.finish()

	res := ld.verify(conn, outs)
	t.Logf("paused data node: %s", res)
	during, err := ackedBetween(outs, pausedAt, resumedAt)
	t.Logf("writes sent and acknowledged during the pause: %d", during)
	if err != nil {
		t.Errorf("no write was acknowledged while %s was paused: nothing was re-placed", d1.name)
	}
	if _, err := ackedBetween(outs, resumedAt, time.Now()); err != nil {
		t.Error("no write was acknowledged after the pause")
	}
	checkNoLossNoDup(t, res)
}

// The slow-node scenario's knobs.
const (
	listenerDelay = 500 * time.Millisecond // per write batch on the slow node
	publisherMax  = 1 << 20                // --queue-max-bytes-per-node (its minimum: one batch)
	padBytes      = 4096                   // per message: in-flight messages exceed publisherMax
	slowWindow    = 8 * time.Second
	slowWarmAcks  = 1000
	// liaisonRSSMax bounds the liaison's resident memory under this load
	// (about 60 MiB measured): twice that means something buffers without
	// bound.
	liaisonRSSMax = 128 << 20
)

// A data node handles each write batch listenerDelay late, and the
// liaison's publisher may hold only publisherMax bytes per node. Under a
// padded load the liaison's memory stays bounded, its publisher stays
// within the bound, clients see slower acks or error statuses, the
// liaison keeps serving, and nothing acknowledged is lost.
func TestSlowDataNodeUnderLoad(t *testing.T) {
	c := newCluster(t)
	c.newDataNode(0)
	slow := c.newDataNode(1, "--debug-listener-delay", listenerDelay.String())
	httpAddr := freeAddr(t)
	lia := c.newLiaison("--queue-max-bytes-per-node", strconv.Itoa(publisherMax),
		"--queue-publish-wait", "1s", "--http-addr", httpAddr)
	conn := readyConn(t, lia.addr)

	ld := startLoadWith(t, conn, loadOpts{pad: padBytes})
	ld.waitAcked(slowWarmAcks, startupAcks)
	from := time.Now()
	var peakRSS int64
	var peakNode, bound float64
	nodeKey := `banyand_publisher_node_bytes_in_use{node="` + slow.name + `"}`
	for time.Since(from) < slowWindow {
		if rss, err := rssBytes(lia.p.cmd.Process.Pid); err == nil {
			peakRSS = max(peakRSS, rss)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := scrapeMetrics(ctx, httpAddr, "banyand_publisher_")
		cancel()
		if err == nil {
			peakNode = max(peakNode, m[nodeKey])
			bound = m["banyand_publisher_max_bytes_per_node"]
		}
		time.Sleep(pollInterval)
	}
	to := time.Now()
	outs := ld.finish()

	if lia.p.exited() {
		t.Fatalf("the liaison exited under backpressure: %v", lia.p.err)
	}
	if err := grpcServing(t, lia.addr)(context.Background()); err != nil {
		t.Fatalf("the liaison is not serving after backpressure: %v", err)
	}
	res := ld.verify(conn, outs)
	lat := ackLatencies(outs, from, to)
	t.Logf("slow data node (%s per batch): %s", listenerDelay, res)
	t.Logf("liaison peak RSS %d MiB (bound %d MiB); publisher bytes in use for %s peaked at %.0f (bound %.0f); ack latency p50 %s p99 %s",
		peakRSS>>20, liaisonRSSMax>>20, slow.name, peakNode, bound, percentile(lat, 0.5).Round(time.Millisecond), percentile(lat, 0.99).Round(time.Millisecond))
	if peakRSS == 0 || peakRSS > liaisonRSSMax {
		t.Errorf("liaison peak RSS %d bytes, want (0, %d]", peakRSS, liaisonRSSMax)
	}
	if bound != publisherMax {
		t.Errorf("/metrics bound %.0f, want %d", bound, publisherMax)
	}
	if peakNode > bound {
		t.Errorf("publisher bytes in use for %s peaked at %.0f, over the bound %.0f", slow.name, peakNode, bound)
	}
	if peakNode < bound/2 {
		t.Errorf("publisher bytes in use for %s peaked at %.0f: the load never pressed on the bound %.0f, the test proves nothing", slow.name, peakNode, bound)
	}
	if res.failed == 0 && percentile(lat, 0.99) < listenerDelay {
		t.Errorf("no error status and ack p99 %s < the node's delay %s: no backpressure seen", percentile(lat, 0.99), listenerDelay)
	}
	checkNoLossNoDup(t, res)
}
