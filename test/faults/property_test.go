//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
)

const (
	propertyGroup = "faults_p"
	propertyName  = "settings"
	propertyKeys  = 8
	propertyKills = 6
)

// Two clients, each through its own liaison, apply the same properties
// (one Apply of a property in flight at a time, so the last acknowledged
// one is well defined) while a data node is killed with SIGKILL and
// restarted again and again; the group keeps a replica. Afterwards every
// property reads as its last acknowledged Apply, or as a later one whose
// answer was lost: never an older one, whichever liaison stamped it.
func TestKillDataNodeUnderPropertyApplies(t *testing.T) {
	c := newCluster(t)
	c.newDataNode(0)
	victim := c.newDataNode(1)
	lias := []*liaison{c.newLiaison(), c.newLiaison()}
	conns := []*grpc.ClientConn{dial(t, lias[0].addr), dial(t, lias[1].addr)}
	createPropertyGroup(t, conns[0])
	for _, conn := range conns {
		waitApplicable(t, conn)
	}

	pa := &propertyApplies{keys: make([]keyState, propertyKeys)}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() { pa.client(ctx, propertyv1.NewPropertyServiceClient(conn), i) })
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	pause := func(lo, hi time.Duration) { time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo)))) }
	for range propertyKills {
		pause(300*time.Millisecond, 900*time.Millisecond)
		victim.p.kill()
		pause(100*time.Millisecond, 600*time.Millisecond)
		c.startDataNode(victim)
	}
	time.Sleep(faultWindow)
	stop()
	wg.Wait()

	var acked, lost, stale, later int
	pc := propertyv1.NewPropertyServiceClient(conns[0])
	for k := range pa.keys {
		ks := &pa.keys[k]
		if ks.acks == 0 {
			continue
		}
		acked += ks.acks
		rctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		resp, err := pc.Query(rctx, &propertyv1.QueryRequest{Groups: []string{propertyGroup}, Name: propertyName, Ids: []string{propertyID(k)}})
		cancel()
		if err != nil {
			t.Fatalf("read %s: %v", propertyID(k), err)
		}
		var read int64 = -1
		if ps := resp.GetProperties(); len(ps) == 1 {
			read = ps[0].GetTags()[0].GetValue().GetInt().GetValue()
		}
		switch {
		case read < 0:
			lost++
			t.Logf("%s: nothing read, last acknowledged seq %d", propertyID(k), ks.lastAcked)
		case read == ks.lastAcked:
		case ks.unsure[read]:
			later++
		default:
			stale++
			t.Logf("%s: read seq %d, last acknowledged %d", propertyID(k), read, ks.lastAcked)
		}
	}
	t.Logf("%d kills: %d applies acknowledged over %d properties; lost %d, stale %d, reading a later unanswered apply %d",
		propertyKills, acked, propertyKeys, lost, stale, later)
	if acked < 2*propertyKeys {
		t.Fatalf("only %d applies acknowledged: the load proves nothing", acked)
	}
	if lost > 0 || stale > 0 {
		t.Errorf("%d properties lost their last acknowledged apply, %d read an older one", lost, stale)
	}
}

func propertyID(k int) string { return "p-" + strconv.Itoa(k) }

// propertyApplies is the load: applies of propertyKeys properties, each
// tagged with a sequence number, one in flight a property.
type propertyApplies struct {
	mu   sync.Mutex // guards keys and seq
	seq  int64
	keys []keyState
	busy [propertyKeys]sync.Mutex // one Apply of a property at a time
}

func (pa *propertyApplies) client(ctx context.Context, pc propertyv1.PropertyServiceClient, i int) {
	for n := i; ctx.Err() == nil; n++ {
		k := n % propertyKeys
		pa.busy[k].Lock()
		pa.mu.Lock()
		pa.seq++
		seq := pa.seq
		pa.mu.Unlock()
		actx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err := pc.Apply(actx, &propertyv1.ApplyRequest{Property: &propertyv1.Property{
			Metadata: &commonv1.Metadata{Group: propertyGroup, Name: propertyName}, Id: propertyID(k),
			Tags: []*modelv1.Tag{
				{Key: "seq", Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: seq}}}},
				{Key: "writer", Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: fmt.Sprint("client-", i)}}}},
			},
		}})
		cancel()
		pa.mu.Lock()
		ks := &pa.keys[k]
		if err == nil {
			ks.lastAcked, ks.unsure = seq, nil
			ks.acks++
		} else {
			if ks.unsure == nil {
				ks.unsure = map[int64]bool{}
			}
			ks.unsure[seq] = true
		}
		pa.mu.Unlock()
		pa.busy[k].Unlock()
	}
}

func createPropertyGroup(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: propertyGroup}, Catalog: commonv1.Catalog_CATALOG_PROPERTY,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 2, Replicas: 1},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	if _, err := databasev1.NewPropertyRegistryServiceClient(conn).Create(ctx, &databasev1.PropertyRegistryServiceCreateRequest{Property: &databasev1.Property{
		Metadata: &commonv1.Metadata{Group: propertyGroup, Name: propertyName},
		Tags: []*databasev1.TagSpec{
			{Name: "seq", Type: databasev1.TagType_TAG_TYPE_INT},
			{Name: "writer", Type: databasev1.TagType_TAG_TYPE_STRING},
		},
	}}); err != nil {
		t.Fatalf("create property: %v", err)
	}
}

// waitApplicable returns once an Apply through conn goes through (the
// liaison has the schema).
func waitApplicable(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	pc := propertyv1.NewPropertyServiceClient(conn)
	deadline := time.Now().Add(startupAcks)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_, err := pc.Apply(ctx, &propertyv1.ApplyRequest{Property: &propertyv1.Property{
			Metadata: &commonv1.Metadata{Group: propertyGroup, Name: propertyName}, Id: "warm-up",
			Tags: []*modelv1.Tag{{Key: "seq", Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: 0}}}}},
		}})
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Apply through the liaison went through in %s: %v", startupAcks, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
