//go:build faults

package faults

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// A data node is killed with SIGKILL under load and left down past its
// lease (replicas = 0, so its shards' data is nowhere else): no query of
// the group answers OK while it is down (each fails UNAVAILABLE, naming it
// once it has left the node table); restarted, everything acknowledged is
// readable.
func TestKilledDataNodeLeftDownQueriesFailLoudly(t *testing.T) {
	u := startUnderLoad(t)
	away := u.nodes[1]
	checkQueriesLoudWhileAway(t, u, "kill -9, left down", away,
		func() { away.p.kill() },
		func() { u.c.startDataNode(away) })
}

// A data node is paused with SIGSTOP past its lease under load while
// queries run, then resumed: no query answers OK while it is away (it
// holds data nowhere else), and once it is back everything acknowledged is
// readable.
func TestPausedDataNodeQueriesFailLoudly(t *testing.T) {
	u := startUnderLoad(t)
	away := u.nodes[1]
	checkQueriesLoudWhileAway(t, u, "SIGSTOP past the lease", away,
		func() { away.p.signal(t, syscall.SIGSTOP) },
		func() { away.p.signal(t, syscall.SIGCONT) })
}

// checkQueriesLoudWhileAway takes node away under load, queries the group
// every 50 ms for twice the fault window (past its 2 s lease), brings it
// back and checks: no query answered OK meanwhile, some named it as the
// holder they miss, and nothing acknowledged is lost or read twice.
func checkQueriesLoudWhileAway(t *testing.T, u underLoad, fault string, node *dataNode, takeAway, bringBack func()) {
	t.Helper()
	conn, ld := u.conn, u.ld
	takeAway()
	t.Logf("%s: %s after %d acks", fault, node.name, ld.acked.Load())
	var ok, unavailable, named, other int
	deadline := time.Now().Add(2 * faultWindow)
	for time.Now().Before(deadline) {
		err := queryGroup(conn)
		switch {
		case err == nil:
			ok++
		case status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded:
			unavailable++
			if strings.Contains(err.Error(), node.name) && strings.Contains(err.Error(), "hold data") {
				named++
			}
		default:
			other++
			t.Logf("query while %s is away: %v", node.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("queries while %s was away: %d OK, %d UNAVAILABLE or past their deadline (%d naming it as a holder), %d other",
		node.name, ok, unavailable, named, other)
	if ok > 0 {
		t.Errorf("%d queries answered OK with a node holding data of the group away", ok)
	}
	if named == 0 {
		t.Errorf("no query named %s as the holder it misses", node.name)
	}
	bringBack()
	t.Logf("%s is back", node.name)
	time.Sleep(faultWindow)
	outs := ld.finish()
	res := ld.verify(conn, outs)
	t.Logf("%s: %s", fault, res)
	checkNoLossNoDup(t, res)
}

// queryGroup asks for the first page of the load's stream over all time.
func queryGroup(conn *grpc.ClientConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err := streamv1.NewStreamServiceClient(conn).Query(ctx, &streamv1.QueryRequest{
		Groups: []string{group}, Name: streamName, Limit: 10,
		TimeRange:  &modelv1.TimeRange{Begin: msTimestamp(0), End: msTimestamp(time.Now().Add(time.Hour).UnixMilli())},
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "searchable", Tags: []string{"service"}}}},
	})
	return err
}

// stormQueries run at once, each asking for the most a query may (100,000
// results, no entity criteria: every node scans every series), while the
// load writes.
const (
	stormQueries   = 8
	stormWindow    = 5 * time.Second
	stormRSSMax    = 256 << 20 // each process's peak VmRSS
	stormMaxWindow = 100_000
)

// A storm of queries asking for the most they may runs for 5 s against a
// loaded cluster: no write stream breaks (no write answered with an error
// or left unanswered, nothing acknowledged lost), every process stays
// within its memory bound and keeps serving.
func TestQueryStormDuringLoad(t *testing.T) {
	u := startUnderLoad(t)
	nodes, lia, conn, ld := u.nodes, u.lia, u.conn, u.ld
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var answered, failed atomic.Int64
	for range stormQueries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := streamv1.NewStreamServiceClient(conn)
			for ctx.Err() == nil {
				qctx, qcancel := context.WithTimeout(ctx, opTimeout)
				_, err := client.Query(qctx, &streamv1.QueryRequest{
					Groups: []string{group}, Name: streamName, Limit: stormMaxWindow,
					TimeRange: &modelv1.TimeRange{Begin: msTimestamp(0), End: msTimestamp(time.Now().Add(time.Hour).UnixMilli())},
				})
				qcancel()
				if err == nil {
					answered.Add(1)
				} else if ctx.Err() == nil {
					failed.Add(1)
				}
			}
		}()
	}
	pids := map[string]int{"liaison": lia.p.cmd.Process.Pid, nodes[0].name: nodes[0].p.cmd.Process.Pid, nodes[1].name: nodes[1].p.cmd.Process.Pid}
	peak := map[string]int64{}
	for from := time.Now(); time.Since(from) < stormWindow; time.Sleep(pollInterval) {
		for name, pid := range pids {
			if rss, err := rssBytes(pid); err == nil {
				peak[name] = max(peak[name], rss)
			}
		}
	}
	cancel()
	wg.Wait()
	outs := ld.finish()
	res := ld.verify(conn, outs)
	t.Logf("query storm (%d at once, limit %d): %d answered, %d failed; peak RSS liaison %d MiB, %s %d MiB, %s %d MiB (bound %d MiB)",
		stormQueries, stormMaxWindow, answered.Load(), failed.Load(), peak["liaison"]>>20, nodes[0].name, peak[nodes[0].name]>>20,
		nodes[1].name, peak[nodes[1].name]>>20, stormRSSMax>>20)
	t.Logf("writes during the storm: %s", res)
	if answered.Load() == 0 {
		t.Errorf("no storm query was answered: the storm proves nothing")
	}
	for name, rss := range peak {
		if rss == 0 || rss > stormRSSMax {
			t.Errorf("%s peak RSS %d bytes, want (0, %d]", name, rss, stormRSSMax)
		}
	}
	if res.failed > 0 || res.unanswered > 0 {
		t.Errorf("writes broke under the query storm: %d with an error status, %d unanswered", res.failed, res.unanswered)
	}
	checkNoLossNoDup(t, res)
}
