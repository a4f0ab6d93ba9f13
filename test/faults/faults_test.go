//go:build faults

package faults

import (
	"testing"
	"time"
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
	c := newCluster(t)
	nodes := []*dataNode{c.newDataNode(0), c.newDataNode(1)}
	lia := c.newLiaison()
	conn := dial(t, lia.addr)
	createSchema(t, conn)
	waitWritable(t, conn)

	ld := startLoad(t, conn)
	ld.waitAcked(warmAcks, startupAcks)
	killedAt := time.Now()
	nodes[1].p.kill()
	t.Logf("killed %s (SIGKILL) after %d acks", nodes[1].name, ld.acked.Load())
	time.Sleep(faultWindow)
	restartAt := time.Now()
	c.startDataNode(nodes[1])
	t.Logf("restarted %s (same name and data path) in %s", nodes[1].name, time.Since(restartAt).Round(time.Millisecond))
	time.Sleep(faultWindow)
	outs := ld.finish()

	res := ld.verify(conn, outs)
	t.Logf("kill -9 data node: %s", res)
	survivor, err := ackedBetween(outs, killedAt, restartAt)
	t.Logf("writes sent after the kill and acknowledged before the restart: %d", survivor)
	if err != nil {
		t.Errorf("no write succeeded on the survivor while %s was down", nodes[1].name)
	}
	checkNoLossNoDup(t, res)
}

// The liaison is killed with SIGKILL under load and a new one started on
// the same address; the client reconnects. Every write the client saw
// acknowledged is readable, once.
func TestKillLiaisonUnderLoad(t *testing.T) {
	c := newCluster(t)
	c.newDataNode(0)
	c.newDataNode(1)
	lia := c.newLiaison()
	conn := dial(t, lia.addr)
	createSchema(t, conn)
	waitWritable(t, conn)

	ld := startLoad(t, conn)
	ld.waitAcked(warmAcks, startupAcks)
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
