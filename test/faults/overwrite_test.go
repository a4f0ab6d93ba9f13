//go:build faults

package faults

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/elementid"
)

// The overwrite load: keys written again and again, each by one writer at
// a time, so the last acknowledged write of a key is well defined.
const (
	overwriteKeys    = 64   // per kind
	overwriteWriters = 8    // per kind, each owning every 8th key
	overwritePad     = 1024 // bytes a stream write carries: flushes come every ~1000 writes
	overwriteKills   = 20
	measureGroup     = "faults_m"
	measureName      = "load_m"
)

// A data node with the smallest write buffer (1 MiB: log rotation,
// recycled log files, sstable ingest and log retirement all happen) is
// killed with SIGKILL 20 times at random points under a load that
// overwrites the same keys of a stream and a measure; every fourth time it
// is killed again while it replays its log. Afterwards every key reads as
// its last acknowledged write, or as a later one whose answer was lost.
func TestKillDataNodeThroughFlushes(t *testing.T) {
	c := newCluster(t)
	small := []string{"--write-buffer-size", "1048576"}
	c.newDataNode(0, small...)
	victim := c.newDataNode(1, small...)
	lia := c.newLiaison()
	conn := readyConn(t, lia.addr)
	createOverwriteMeasure(t, conn)

	ow := startOverwrites(t, conn)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	pause := func(lo, hi time.Duration) { time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo)))) }
	for i := range overwriteKills {
		pause(200*time.Millisecond, 700*time.Millisecond)
		victim.p.kill()
		if i%4 == 3 {
			// Killed again while it starts: during the replay of its log.
			victim.p = c.start(victim.name, c.bin, c.dataNodeArgs(victim)...)
			pause(20*time.Millisecond, 300*time.Millisecond)
			victim.p.kill()
		}
		pause(50*time.Millisecond, 300*time.Millisecond)
		c.startDataNode(victim)
	}
	time.Sleep(faultWindow)
	ow.finish()
	res := ow.verify(t, conn)
	t.Logf("%d kills through flushes: %s", overwriteKills, res)
	if res.acked == 0 || res.overwritten == 0 {
		t.Fatalf("the load acknowledged %d writes, %d of them overwrites: it proves nothing", res.acked, res.overwritten)
	}
	if res.lost > 0 || res.stale > 0 || res.twoVersions > 0 {
		t.Errorf("%d keys lost their last acknowledged write, %d read an older one, %d read in two versions", res.lost, res.stale, res.twoVersions)
	}
}

func createOverwriteMeasure(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: measureGroup}, Catalog: commonv1.Catalog_CATALOG_MEASURE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards},
	}}); err != nil {
		t.Fatalf("create measure group: %v", err)
	}
	if _, err := databasev1.NewMeasureRegistryServiceClient(conn).Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: &databasev1.Measure{
		Metadata:    &commonv1.Metadata{Group: measureGroup, Name: measureName},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING}}}},
		Fields:      []*databasev1.FieldSpec{{Name: "v", FieldType: databasev1.FieldType_FIELD_TYPE_INT}},
		Entity:      &databasev1.Entity{TagNames: []string{"service"}},
	}}); err != nil {
		t.Fatalf("create measure: %v", err)
	}
}

// keyState is what the writers did to one key.
type keyState struct {
	lastAcked int64          // seq of the last acknowledged write; 0 = none
	unsure    map[int64]bool // seqs after it whose fate is unknown (error or no answer)
	acks      int
}

type overwrites struct {
	t         *testing.T
	conn      *grpc.ClientConn
	base      int64 // ms: key k is at base + k
	seq       atomic.Int64
	streamKey [overwriteKeys]keyState
	measKey   [overwriteKeys]keyState
	mu        sync.Mutex
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

func startOverwrites(t *testing.T, conn *grpc.ClientConn) *overwrites {
	ctx, cancel := context.WithCancel(context.Background())
	o := &overwrites{t: t, conn: conn, base: time.Now().Add(-time.Hour).UnixMilli(), stop: cancel}
	for w := range overwriteWriters {
		o.wg.Add(2)
		go func() { defer o.wg.Done(); o.writeStream(ctx, w) }()
		go func() { defer o.wg.Done(); o.writeMeasure(ctx, w) }()
	}
	return o
}

func (o *overwrites) finish() { o.stop(); o.wg.Wait() }

// record settles one write of key k: acked, or of unknown fate.
func (o *overwrites) record(keys *[overwriteKeys]keyState, k int, seq int64, acked bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ks := &keys[k]
	if acked {
		ks.lastAcked, ks.unsure = seq, nil
		ks.acks++
		return
	}
	if ks.unsure == nil {
		ks.unsure = map[int64]bool{}
	}
	ks.unsure[seq] = true
}

func overwriteElementID(k int) string { return "ow-" + strconv.Itoa(k) }

func (o *overwrites) writeStream(ctx context.Context, w int) {
	client := streamv1.NewStreamServiceClient(o.conn)
	for i := 0; ctx.Err() == nil; i++ {
		k := w + (i%(overwriteKeys/overwriteWriters))*overwriteWriters
		seq := o.seq.Add(1)
		pad := make([]byte, overwritePad)
		binary.BigEndian.PutUint64(pad, uint64(seq))
		st, err := writeOne(client, &streamv1.WriteRequest{
			Metadata: &commonv1.Metadata{Group: group, Name: streamName}, MessageId: uint64(seq),
			Element: &streamv1.ElementValue{ElementId: overwriteElementID(k), Timestamp: msTimestamp(o.base + int64(k)),
				TagFamilies: []*modelv1.TagFamilyForWrite{
					{Tags: []*modelv1.TagValue{svcTag(int64(1000 + k))}},
					{Tags: []*modelv1.TagValue{{Value: &modelv1.TagValue_BinaryData{BinaryData: pad}}}},
				}},
		})
		o.record(&o.streamKey, k, seq, err == nil && st == statusOK)
	}
}

func (o *overwrites) writeMeasure(ctx context.Context, w int) {
	client := measurev1.NewMeasureServiceClient(o.conn)
	for i := 0; ctx.Err() == nil; i++ {
		k := w + (i%(overwriteKeys/overwriteWriters))*overwriteWriters
		seq := o.seq.Add(1)
		wctx, cancel := context.WithTimeout(ctx, opTimeout)
		acked := false
		if ws, err := client.Write(wctx); err == nil {
			// The message id is the point's version: the later write wins.
			err = ws.Send(&measurev1.WriteRequest{Metadata: &commonv1.Metadata{Group: measureGroup, Name: measureName}, MessageId: uint64(seq),
				DataPoint: &measurev1.DataPointValue{Timestamp: msTimestamp(o.base + int64(k)),
					TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{svcTag(int64(k))}}},
					Fields:      []*modelv1.FieldValue{{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: seq}}}}}})
			if err == nil && ws.CloseSend() == nil {
				r, err := ws.Recv()
				acked = err == nil && r.GetStatus() == statusOK
			}
		}
		cancel()
		o.record(&o.measKey, k, seq, acked)
	}
}

// overwriteCounts is what the read-back found.
type overwriteCounts struct {
	acked, overwritten int // acknowledged writes; of them, writes of a key acknowledged before
	keys               int // keys with an acknowledged write
	lost, stale        int // keys reading nothing, or only writes older than the last acknowledged
	later              int // keys reading a later write whose answer was lost
	// twoVersions are keys read more than once: both copies of an element
	// two nodes hold, where the query must keep the later.
	twoVersions int
}

func (c overwriteCounts) String() string {
	return fmt.Sprintf("acked %d (%d overwrites) over %d keys; lost %d, stale %d, reading a later unanswered write %d, read in two versions %d",
		c.acked, c.overwritten, c.keys, c.lost, c.stale, c.later, c.twoVersions)
}

func (o *overwrites) verify(t *testing.T, conn *grpc.ClientConn) overwriteCounts {
	t.Helper()
	var res overwriteCounts
	// check judges the writes read for one key: the last acknowledged one,
	// or a later one whose answer was lost, must be among them.
	check := func(ks *keyState, read []int64, what string) {
		if ks.acks == 0 {
			return
		}
		res.keys++
		res.acked += ks.acks
		res.overwritten += ks.acks - 1
		if len(read) > 1 {
			res.twoVersions++
		}
		switch {
		case len(read) == 0:
			res.lost++
			t.Logf("%s: nothing read, last acknowledged seq %d", what, ks.lastAcked)
		case slices.Contains(read, ks.lastAcked):
		case slices.ContainsFunc(read, func(s int64) bool { return ks.unsure[s] }):
			res.later++
		default:
			res.stale++
			t.Logf("%s: read seqs %v, last acknowledged %d", what, read, ks.lastAcked)
		}
	}
	streams := streamv1.NewStreamServiceClient(conn)
	measures := measurev1.NewMeasureServiceClient(conn)
	for k := range overwriteKeys {
		tr := &modelv1.TimeRange{Begin: msTimestamp(o.base + int64(k)), End: msTimestamp(o.base + int64(k))}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		sr, err := streams.Query(ctx, &streamv1.QueryRequest{Groups: []string{group}, Name: streamName, TimeRange: tr, Limit: 10,
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
				Name: "service", Op: modelv1.Condition_BINARY_OP_EQ, Value: svcTag(int64(1000 + k))}}},
			Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "data", Tags: []string{"pad"}}}}})
		if err != nil {
			cancel()
			t.Fatalf("read stream key %d: %v", k, err)
		}
		var read []int64
		for _, el := range sr.GetElements() {
			if el.GetElementId() == elementid.Of(group, streamName, overwriteElementID(k)) {
				read = append(read, int64(binary.BigEndian.Uint64(el.GetTagFamilies()[0].GetTags()[0].GetValue().GetBinaryData())))
			}
		}
		check(&o.streamKey[k], read, "stream key "+strconv.Itoa(k))

		mr, err := measures.Query(ctx, &measurev1.QueryRequest{Groups: []string{measureGroup}, Name: measureName, TimeRange: tr, Limit: 10,
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
				Name: "service", Op: modelv1.Condition_BINARY_OP_EQ, Value: svcTag(int64(k))}}},
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"v"}}})
		cancel()
		if err != nil {
			t.Fatalf("read measure key %d: %v", k, err)
		}
		read = nil
		for _, dp := range mr.GetDataPoints() {
			read = append(read, dp.GetFields()[0].GetValue().GetInt().GetValue())
		}
		check(&o.measKey[k], read, "measure key "+strconv.Itoa(k))
	}
	return res
}
