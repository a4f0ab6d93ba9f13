//go:build faults

package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/elementid"
)

// The load's schema and shape.
const (
	group       = "faults"
	streamName  = "load"
	shards      = 4
	entities    = 20
	writers     = 4                     // concurrent Write streams
	sendEvery   = time.Millisecond      // per writer: at most 1000 msg/s each
	maxInFlight = 200                   // unanswered messages per Write stream
	maxMessages = 1 << 19               // capacity of the outcome table
	drainLimit  = 15 * time.Second      // > the liaison's default --ack-timeout
	chunkMillis = 1000                  // timestamps per verification query
	verifyLimit = 30 * time.Second      // how long to poll for a stable read-back
	probeLimit  = 20 * time.Second      // how long to wait for a first successful write
	queryLimit  = chunkMillis * 2       // page size: a full page means a bad chunking
	statusOK    = "STATUS_SUCCEED"      // modelv1.Status_STATUS_SUCCEED
	opTimeout   = 10 * time.Second      // one registry call or query
	reopenPause = 20 * time.Millisecond // between attempts to reopen a Write stream
)

func createSchema(t *testing.T, conn *grpc.ClientConn) { createSchemaWith(t, conn, 0) }

// createSchemaWith creates the load's group, keeping replicas copies
// beyond the first of each write, and stream.
func createSchemaWith(t *testing.T, conn *grpc.ClientConn, replicas uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	day := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: group},
		Catalog:  commonv1.Catalog_CATALOG_STREAM,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards, SegmentInterval: day, Replicas: replicas,
			Ttl: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 7}},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	if _, err := databasev1.NewStreamRegistryServiceClient(conn).Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: &databasev1.Stream{
		Metadata: &commonv1.Metadata{Group: group, Name: streamName},
		TagFamilies: []*databasev1.TagFamilySpec{
			{Name: "searchable", Tags: []*databasev1.TagSpec{{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING}}},
			// Written only by loads with padding (loadOpts.pad).
			{Name: "data", Tags: []*databasev1.TagSpec{{Name: "pad", Type: databasev1.TagType_TAG_TYPE_DATA_BINARY}}},
		},
		Entity: &databasev1.Entity{TagNames: []string{"service"}},
	}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
}

func svcTag(e int64) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "svc-" + strconv.FormatInt(e, 10)}}}
}

// waitWritable polls single probe writes (on their own entity, which the
// verification does not read) until one is acknowledged: the liaison then
// knows the schema and a data node.
func waitWritable(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	client := streamv1.NewStreamServiceClient(conn)
	deadline := time.Now().Add(probeLimit)
	var last string
	for i := 0; ; i++ {
		st, err := writeOne(client, &streamv1.WriteRequest{
			Metadata:  &commonv1.Metadata{Group: group, Name: streamName},
			MessageId: 1,
			Element: &streamv1.ElementValue{
				ElementId:   "probe-" + strconv.Itoa(i),
				Timestamp:   msTimestamp(time.Now().UnixMilli()),
				TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{svcTag(-1)}}},
			},
		})
		if err == nil && st == statusOK {
			return
		}
		last = fmt.Sprint(st, err)
		if time.Now().After(deadline) {
			t.Fatalf("no probe write acknowledged within %s; last answer: %s", probeLimit, last)
		}
		time.Sleep(pollInterval)
	}
}

func writeOne(client streamv1.StreamServiceClient, req *streamv1.WriteRequest) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	ws, err := client.Write(ctx)
	if err != nil {
		return "", err
	}
	if err := ws.Send(req); err != nil {
		return "", err
	}
	if err := ws.CloseSend(); err != nil {
		return "", err
	}
	r, err := ws.Recv()
	return r.GetStatus(), err
}

// outcome is what became of one message (one seq).
type outcome struct {
	sent       bool
	sentAt     time.Time
	answered   bool
	answeredAt time.Time
	status     string
}

// loadOpts shape a load; the zero value is the default load.
type loadOpts struct {
	pad      int // bytes of binary padding per message (a second tag family); 0 = none
	inFlight int // unanswered messages per Write stream; 0 = maxInFlight
	// open opens one Write stream; nil: stream elements (openElementStream).
	open func(ctx context.Context, l *load) (writeStream, error)
}

// writeStream is one client Write stream of a load: send writes message
// seq with id, recv returns the next answer's id and status.
type writeStream interface {
	send(seq int64, id uint64) error
	recv() (id uint64, status string, err error)
	CloseSend() error
}

// elementStream writes the load's stream elements.
type elementStream struct {
	streamv1.StreamService_WriteClient
	l   *load
	md  *commonv1.Metadata
	pad *modelv1.TagFamilyForWrite
}

func openElementStream(conn *grpc.ClientConn) func(context.Context, *load) (writeStream, error) {
	client := streamv1.NewStreamServiceClient(conn)
	return func(ctx context.Context, l *load) (writeStream, error) {
		ws, err := client.Write(ctx)
		if err != nil {
			return nil, err
		}
		es := &elementStream{StreamService_WriteClient: ws, l: l, md: &commonv1.Metadata{Group: group, Name: streamName}}
		if l.opts.pad > 0 {
			es.pad = &modelv1.TagFamilyForWrite{Tags: []*modelv1.TagValue{{Value: &modelv1.TagValue_BinaryData{BinaryData: make([]byte, l.opts.pad)}}}}
		}
		return es, nil
	}
}

func (s *elementStream) send(seq int64, id uint64) error {
	ms := s.l.millis(seq)
	req := &streamv1.WriteRequest{Metadata: s.md, MessageId: id, Element: &streamv1.ElementValue{
		ElementId:   s.l.elementID(seq),
		Timestamp:   &timestamppb.Timestamp{Seconds: ms / 1000, Nanos: int32(ms%1000) * 1e6},
		TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{svcTag(seq % entities)}}},
	}}
	if s.pad != nil {
		req.Element.TagFamilies = append(req.Element.TagFamilies, s.pad)
	}
	return s.Send(req)
}

func (s *elementStream) recv() (uint64, string, error) {
	r, err := s.Recv()
	return r.GetMessageId(), r.GetStatus(), err
}

// load is a background writer: writers Write streams, each reopened when
// it breaks, sending stream elements (or spans, see spanLoad) with unique
// ids; it records the final status of every message it sent.
type load struct {
	t     *testing.T
	open  func(ctx context.Context, l *load) (writeStream, error)
	runID string
	opts  loadOpts
	base  int64 // ms: message seq has timestamp base + seq/entities

	next     atomic.Int64
	acked    atomic.Int64
	outcomes []outcome // by seq; see session for who writes what when

	stop   context.CancelFunc
	wg     sync.WaitGroup
	opened atomic.Int64 // Write streams opened, reopens included
}

// readyConn dials the liaison at addr, creates the schema and returns once
// a write goes through.
func readyConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn := dial(t, addr)
	createSchema(t, conn)
	waitWritable(t, conn)
	return conn
}

// underLoad is how three scenarios start: etcd, two data nodes, one
// liaison, and the warm load writing through it.
type underLoad struct {
	c     *cluster
	nodes []*dataNode
	lia   *liaison
	conn  *grpc.ClientConn
	ld    *load
}

func startUnderLoad(t *testing.T) underLoad {
	t.Helper()
	c := newCluster(t)
	nodes := []*dataNode{c.newDataNode(0), c.newDataNode(1)}
	lia := c.newLiaison()
	conn := readyConn(t, lia.addr)
	return underLoad{c: c, nodes: nodes, lia: lia, conn: conn, ld: startWarmLoad(t, conn)}
}

// startWarmLoad starts the default load on conn and returns once warmAcks
// writes were acknowledged: the state every fault is injected in.
func startWarmLoad(t *testing.T, conn *grpc.ClientConn) *load {
	t.Helper()
	ld := startLoad(t, conn)
	ld.waitAcked(warmAcks, startupAcks)
	return ld
}

func startLoad(t *testing.T, conn *grpc.ClientConn) *load {
	t.Helper()
	return startLoadWith(t, conn, loadOpts{})
}

func startLoadWith(t *testing.T, conn *grpc.ClientConn, opts loadOpts) *load {
	t.Helper()
	if opts.inFlight == 0 {
		opts.inFlight = maxInFlight
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	if opts.open == nil {
		opts.open = openElementStream(conn)
	}
	l := &load{
		t:        t,
		open:     opts.open,
		runID:    "f" + hex.EncodeToString(id[:]),
		opts:     opts,
		base:     time.Now().UnixMilli(),
		outcomes: make([]outcome, maxMessages),
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	for range writers {
		l.wg.Go(func() { l.writer(ctx) })
	}
	t.Cleanup(func() { cancel(); l.wg.Wait() })
	return l
}

// finish stops sending, waits for the answers of messages in flight (up to
// drainLimit) and returns the outcomes of all seqs allocated.
func (l *load) finish() []outcome {
	l.stop()
	l.wg.Wait()
	n := min(l.next.Load(), maxMessages)
	return l.outcomes[:n]
}

// waitAcked polls until n messages are acknowledged in all.
func (l *load) waitAcked(n int64, limit time.Duration) {
	l.t.Helper()
	deadline := time.Now().Add(limit)
	for l.acked.Load() < n {
		if time.Now().After(deadline) {
			l.t.Fatalf("only %d of %d writes acknowledged within %s", l.acked.Load(), n, limit)
		}
		time.Sleep(pollInterval)
	}
}

func (l *load) elementID(seq int64) string { return l.runID + "-" + strconv.FormatInt(seq, 10) }

func (l *load) seqOf(id string) int64 {
	rest, ok := strings.CutPrefix(id, l.runID+"-")
	if !ok {
		return -1
	}
	seq, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return -1
	}
	return seq
}

func (l *load) millis(seq int64) int64 { return l.base + seq/entities }

// seqOfElement is the seq of an element answered for entity e: its
// timestamp gives the seq, and its id must be the one answered for that
// seq's written id (the liaison answers BanyanDB's hash of it); -1 if the
// element is not one of this run's.
func (l *load) seqOfElement(e int64, el *streamv1.Element) int64 {
	k := el.GetTimestamp().AsTime().UnixMilli() - l.base
	if k < 0 {
		return -1
	}
	seq := k*entities + e
	if el.GetElementId() != elementid.Of(group, streamName, l.elementID(seq)) {
		return -1
	}
	return seq
}

func (l *load) writer(ctx context.Context) {
	tick := time.NewTicker(sendEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		l.session(ctx, tick)
		select {
		case <-ctx.Done():
		case <-time.After(reopenPause):
		}
	}
}

// session runs one Write stream until it breaks or ctx ends sending, then
// waits up to drainLimit for the answers of the messages in flight.
// Messages still unanswered when it returns stay unanswered: their fate
// is unknown to the client. The send loop writes an outcome's sent fields
// before publishing its id in pending; the receive loop writes the answer
// after taking it from pending, under the same mutex.
func (l *load) session(ctx context.Context, tick *time.Ticker) {
	streamCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ws, err := l.open(streamCtx, l)
	if err != nil {
		return
	}
	l.opened.Add(1)
	var mu sync.Mutex
	pending := map[uint64]int64{} // message id -> seq
	slots := make(chan struct{}, l.opts.inFlight)
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		for {
			rid, st, err := ws.recv()
			if err != nil {
				return
			}
			now := time.Now()
			mu.Lock()
			seq, ok := pending[rid]
			delete(pending, rid)
			if ok {
				o := &l.outcomes[seq]
				o.answered, o.answeredAt, o.status = true, now, st
			}
			mu.Unlock()
			if ok {
				if st == statusOK {
					l.acked.Add(1)
				}
				<-slots
			}
		}
	}()
	var id uint64
send:
	for {
		select {
		case <-ctx.Done():
			break send
		case <-recvDone:
			break send
		case slots <- struct{}{}:
		}
		select {
		case <-ctx.Done():
			break send
		case <-recvDone:
			break send
		case <-tick.C:
		}
		seq := l.next.Add(1) - 1
		if seq >= maxMessages {
			break
		}
		id++
		mu.Lock()
		l.outcomes[seq].sent, l.outcomes[seq].sentAt = true, time.Now()
		pending[id] = seq
		mu.Unlock()
		if err := ws.send(seq, id); err != nil {
			// Not sent: the stream is broken (Recv tells why).
			mu.Lock()
			delete(pending, id)
			l.outcomes[seq].sent = false
			mu.Unlock()
			break
		}
	}
	_ = ws.CloseSend()
	select {
	case <-recvDone:
	case <-time.After(drainLimit):
		cancel()
		<-recvDone
	}
}

// counts is what a scenario prints.
type counts struct {
	sent, acked, failed, unanswered int
	readable, lost, duplicates      int
	failedBy                        map[string]int
	lostSample                      []int64
}

func (c counts) String() string {
	return fmt.Sprintf("writes sent %d, acked %d, failed (error status) %d %v, unanswered %d, readable %d, lost (acked, not readable) %d, duplicates %d",
		c.sent, c.acked, c.failed, c.failedBy, c.unanswered, c.readable, c.lost, c.duplicates)
}

// readBack queries every entity's time range through conn and returns how
// many times each seq of this run was seen.
func (l *load) readBack(conn *grpc.ClientConn, n int64) (map[int64]int, error) {
	client := streamv1.NewStreamServiceClient(conn)
	seen := map[int64]int{}
	last := l.millis(n) + 1
	for e := range int64(entities) {
		for from := l.base; from < last; from += chunkMillis {
			to := min(from+chunkMillis, last)
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			resp, err := client.Query(ctx, &streamv1.QueryRequest{
				Groups: []string{group}, Name: streamName,
				// BanyanDB's ranges hold both ends: [from, to) ends at to-1.
				TimeRange: &modelv1.TimeRange{Begin: msTimestamp(from), End: msTimestamp(to - 1)},
				Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
					Name: "service", Op: modelv1.Condition_BINARY_OP_EQ, Value: svcTag(e),
				}}},
				Limit:   queryLimit,
				OrderBy: &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_ASC},
				// Not the padding: the element ids are what is counted.
				Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "searchable", Tags: []string{"service"}}}},
			})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("query entity %d [%d, %d) ms: %w", e, from, to, err)
			}
			if len(resp.GetElements()) >= queryLimit {
				return nil, status.Errorf(codes.Internal, "query entity %d [%d, %d) ms returned a full page of %d", e, from, to, queryLimit)
			}
			for _, el := range resp.GetElements() {
				if seq := l.seqOfElement(e, el); seq >= 0 {
					seen[seq]++
				}
			}
		}
	}
	return seen, nil
}

func msTimestamp(ms int64) *timestamppb.Timestamp {
	return &timestamppb.Timestamp{Seconds: ms / 1000, Nanos: int32(ms%1000) * 1e6}
}

// verify tallies the outcomes and polls the read-back until every acked
// write is readable and two consecutive read-backs agree, or verifyLimit
// passes; it returns the last tally.
func (l *load) verify(conn *grpc.ClientConn, outs []outcome) counts {
	l.t.Helper()
	return verifyOutcomes(l.t, outs, func() (map[int64]int, error) { return l.readBack(conn, int64(len(outs))) })
}

// verifyOutcomes is verify with readBack returning how many times each
// seq was read.
func verifyOutcomes(t *testing.T, outs []outcome, readBack func() (map[int64]int, error)) counts {
	t.Helper()
	var c counts
	c.failedBy = map[string]int{}
	for _, o := range outs {
		switch {
		case !o.sent:
		case !o.answered:
			c.sent++
			c.unanswered++
		case o.status == statusOK:
			c.sent++
			c.acked++
		default:
			c.sent++
			c.failed++
			c.failedBy[o.status]++
		}
	}
	deadline := time.Now().Add(verifyLimit)
	prevReadable := -1
	var lastErr error
	for {
		seen, err := readBack()
		if err == nil {
			c.readable, c.lost, c.duplicates, c.lostSample = 0, 0, 0, nil
			for seq, k := range seen {
				if seq < int64(len(outs)) {
					c.readable++
					c.duplicates += k - 1
				}
			}
			for seq, o := range outs {
				if o.answered && o.status == statusOK && seen[int64(seq)] == 0 {
					c.lost++
					if len(c.lostSample) < 10 {
						c.lostSample = append(c.lostSample, int64(seq))
					}
				}
			}
			if c.lost == 0 && c.readable == prevReadable {
				return c
			}
			prevReadable = c.readable
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if prevReadable < 0 {
				t.Fatalf("no complete read-back within %s: %v", verifyLimit, lastErr)
			}
			return c
		}
		time.Sleep(pollInterval)
	}
}

var errNoAcks = errors.New("no acknowledged write")

// ackedBetween counts messages sent after from and acknowledged before to.
func ackedBetween(outs []outcome, from, to time.Time) (int, error) {
	n := 0
	for _, o := range outs {
		if o.sent && o.answered && o.status == statusOK && o.sentAt.After(from) && o.answeredAt.Before(to) {
			n++
		}
	}
	if n == 0 {
		return 0, errNoAcks
	}
	return n, nil
}
