//go:build faults

package faults

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// replicas = 1 on three data nodes under load: data-1 is paused with
// SIGSTOP past its lease and the publisher's retry budget, then data-2 is
// killed for good while data-1 is still away, so writes are acknowledged
// with one copy on data-0 and a hint each. data-1 resumes: data-0 hands
// its hints off (its pending hints go back to 0), and every acknowledged
// write is readable although data-2 never returns.
func TestReplicasHealAfterAPauseAndAKill(t *testing.T) {
	c := newCluster(t)
	metricsAddr := freeAddr(t)
	d0 := c.newDataNode(0, "--http-addr", metricsAddr, "--handoff-interval", "200ms")
	d1, d2 := c.newDataNode(1), c.newDataNode(2)
	lia := c.newLiaison("--queue-retry-budget", "1s")
	conn := dial(t, lia.addr)
	createSchemaWith(t, conn, 1)
	waitWritable(t, conn)
	ld := startWarmLoad(t, conn)

	d1.p.signal(t, syscall.SIGSTOP)
	t.Logf("paused %s after %d acks", d1.name, ld.acked.Load())
	time.Sleep(faultWindow) // past its 2 s lease: it leaves the node table
	d2.p.kill()
	t.Logf("killed %s for good after %d acks", d2.name, ld.acked.Load())
	ackedAtKill := ld.acked.Load()
	time.Sleep(faultWindow)
	hints := scrapeHandoff(t, metricsAddr)
	t.Logf("with one data node live: %s keeps %v hints (%v received)", d0.name,
		hints["banyand_handoff_pending_hints"], hints["banyand_handoff_received_hints_total"])
	if hints["banyand_handoff_received_hints_total"] == 0 {
		t.Error("writes acknowledged with one of two copies left no hint")
	}
	if ld.acked.Load() == ackedAtKill {
		t.Error("no write acknowledged with one data node live")
	}

	d1.p.signal(t, syscall.SIGCONT)
	t.Logf("resumed %s", d1.name)
	time.Sleep(faultWindow)
	outs := ld.finish()
	deadline := time.Now().Add(verifyLimit)
	for {
		hints = scrapeHandoff(t, metricsAddr)
		if hints["banyand_handoff_pending_hints"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still keeps %v hints %s after %s returned", d0.name, hints["banyand_handoff_pending_hints"], verifyLimit, d1.name)
		}
		time.Sleep(pollInterval)
	}
	t.Logf("hints: %v received, %v delivered, %v dropped, %v pending", hints["banyand_handoff_received_hints_total"],
		hints["banyand_handoff_delivered_hints_total"], hints["banyand_handoff_dropped_hints_total"], hints["banyand_handoff_pending_hints"])
	if hints["banyand_handoff_dropped_hints_total"] != 0 {
		t.Error("hints dropped: copies never made")
	}

	res := ld.verify(conn, outs)
	t.Logf("replicas = 1, one node paused, one killed: %s", res)
	checkNoLossNoDup(t, res)
}

// scrapeHandoff reads a data node's banyand_handoff_* metrics.
func scrapeHandoff(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	m, err := scrapeMetrics(ctx, addr, "banyand_handoff_")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	return m
}
