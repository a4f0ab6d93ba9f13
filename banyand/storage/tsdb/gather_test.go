package tsdb

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
)

func openTestLog(t *testing.T, gather time.Duration) *writeLog {
	t.Helper()
	l, err := openWriteLog(t.TempDir(), 1, false, gather, syncer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.close() })
	return l
}

// appendAndWait is one writer's batch: a record, then its sync.
func appendAndWait(l *writeLog, rec string) error {
	seq, err := l.append([]byte(rec))
	if err != nil {
		return err
	}
	return l.wait(seq)
}

// sharedSync makes one sync take n records, as if n writers shared it.
func sharedSync(t *testing.T, l *writeLog, n int) {
	t.Helper()
	var seq uint64
	for i := range n {
		var err error
		if seq, err = l.append(fmt.Appendf(nil, "shared-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.wait(seq); err != nil {
		t.Fatal(err)
	}
}

func (l *writeLog) syncCount() uint64 {
	_, _, syncs := l.stats()
	return syncs
}

// The writers a sync released share the next sync: its leader waits until
// as many records are queued as the previous sync took. The wait is set far
// beyond the test's length, so only the records can end it: one sync for
// the three, or the test times out.
func TestSyncGathersTheWritersOfThePreviousSync(t *testing.T) {
	l := openTestLog(t, time.Hour)
	sharedSync(t, l, 3)
	before := l.syncCount()

	// The leader's record alone: it must wait for two more.
	leader := make(chan error, 1)
	go func() { leader <- appendAndWait(l, "second-0") }()
	poll.Until(t, "the leader to gather", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.gathering
	})
	select {
	case err := <-leader:
		t.Fatalf("the leader synced one record of the three expected: %v", err)
	default:
	}
	var others sync.WaitGroup
	errs := make(chan error, 2)
	for i := 1; i <= 2; i++ {
		others.Go(func() { errs <- appendAndWait(l, fmt.Sprintf("second-%d", i)) })
	}
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	others.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := l.syncCount() - before; got != 1 {
		t.Fatalf("three writers released by one sync took %d syncs, want 1", got)
	}
	if l.syncedSeq != 6 {
		t.Fatalf("synced through record %d, want 6", l.syncedSeq)
	}
}

// A leader whose fellow writers do not come back syncs once the gather
// time is up: the bound holds, and the record is durable.
func TestSyncGatherIsBounded(t *testing.T) {
	const gather = 50 * time.Millisecond
	l := openTestLog(t, gather)
	sharedSync(t, l, 2)
	start := time.Now()
	if err := appendAndWait(l, "alone"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < gather {
		t.Fatalf("synced after %v with 1 of 2 records queued; want a wait of the gather time, %v", waited, gather)
	}
	if l.syncedSeq != 3 {
		t.Fatalf("synced through record %d, want 3", l.syncedSeq)
	}
}

// A lone writer never waits: each sync took one record, which the next
// sync has as soon as the writer appends. With an hour's gather time, any
// wait would time the test out.
func TestSyncGatherSparesALoneWriter(t *testing.T) {
	l := openTestLog(t, time.Hour)
	for i := range 20 {
		if err := appendAndWait(l, fmt.Sprintf("rec-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.syncCount(); got != 20 {
		t.Fatalf("%d syncs for 20 records written one at a time, want 20", got)
	}
}

// A writer that comes after the log was idle for gatherIdle gather times
// does not wait for the writers of the last sync, however many it had:
// they are not about to come back. The idle time is set in the past
// rather than slept, and the gather time is an hour: any wait would time
// the test out.
func TestSyncGatherSkipsAfterIdle(t *testing.T) {
	const gather = time.Hour
	l := openTestLog(t, gather)
	sharedSync(t, l, 3)
	l.mu.Lock()
	l.syncEnded = l.syncEnded.Add(-gatherIdle * gather)
	l.mu.Unlock()
	if err := appendAndWait(l, "after-idle"); err != nil {
		t.Fatal(err)
	}
	if l.syncedSeq != 4 {
		t.Fatalf("synced through record %d, want 4", l.syncedSeq)
	}
}
