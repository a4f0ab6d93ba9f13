package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// The write and read half of the OAP-shaped client: the bulk write
// processors (AbstractBulkWriteProcessor.doFlush with MeasureWrite and
// StreamWrite) and BanyanDBMetricsDAO.multiGet.

// oapFlushTimeout is bydb.yml's flushTimeout: the deadline OAP puts on a
// flush's whole Write stream.
const oapFlushTimeout = 10 * time.Second

// clockStart anchors nanoClock; it is read once and never written.
var clockStart = time.Now()

// nanoClock is OAP's message id, System.nanoTime(): a monotonic clock
// reading in nanoseconds.
func nanoClock() uint64 {
	return uint64(clockStart.UnixNano()) + uint64(time.Since(clockStart))
}

// oapTimestamp is how MeasureWrite and StreamWrite encode their epoch
// milliseconds.
func oapTimestamp(t time.Time) *timestamppb.Timestamp {
	ms := t.UnixMilli()
	return &timestamppb.Timestamp{Seconds: ms / 1000, Nanos: int32(ms % 1000 * 1_000_000)}
}

// oapWrite is one MeasureWrite or StreamWrite: build(true) is build() with
// metadata and spec, build(false) is buildOnlyValues(). Both take a new
// message id.
type oapWrite[Req any] interface {
	metadata() *commonv1.Metadata
	build(full bool) *Req
}

// oapMeasureWrite holds tags and fields in maps that build walks in
// alphabetical order, as MeasureWrite's TreeMaps do.
type oapMeasureWrite struct {
	md     *commonv1.Metadata
	ts     time.Time
	tags   map[string]map[string]*modelv1.TagValue // family → tag → value
	fields map[string]*modelv1.FieldValue
}

func (w *oapMeasureWrite) metadata() *commonv1.Metadata { return w.md }

func (w *oapMeasureWrite) build(full bool) *measurev1.WriteRequest {
	dp := &measurev1.DataPointValue{Timestamp: oapTimestamp(w.ts)}
	spec := &measurev1.DataPointSpec{}
	for _, fam := range sortedKeys(w.tags) {
		tf := &modelv1.TagFamilyForWrite{}
		ts := &measurev1.TagFamilySpec{Name: fam}
		for _, tag := range sortedKeys(w.tags[fam]) {
			ts.TagNames = append(ts.TagNames, tag)
			tf.Tags = append(tf.Tags, w.tags[fam][tag])
		}
		spec.TagFamilySpec = append(spec.TagFamilySpec, ts)
		dp.TagFamilies = append(dp.TagFamilies, tf)
	}
	for _, f := range sortedKeys(w.fields) {
		spec.FieldNames = append(spec.FieldNames, f)
		dp.Fields = append(dp.Fields, w.fields[f])
	}
	req := &measurev1.WriteRequest{DataPoint: dp}
	if full {
		req.Metadata, req.DataPointSpec = w.md, spec
	}
	req.MessageId = nanoClock()
	return req
}

// oapStreamWrite is a StreamWrite, ordered like oapMeasureWrite.
type oapStreamWrite struct {
	md   *commonv1.Metadata
	id   string
	ts   time.Time
	tags map[string]map[string]*modelv1.TagValue
}

func (w *oapStreamWrite) metadata() *commonv1.Metadata { return w.md }

func (w *oapStreamWrite) build(full bool) *streamv1.WriteRequest {
	el := &streamv1.ElementValue{ElementId: w.id, Timestamp: oapTimestamp(w.ts)}
	var spec []*streamv1.TagFamilySpec
	for _, fam := range sortedKeys(w.tags) {
		tf := &modelv1.TagFamilyForWrite{}
		ts := &streamv1.TagFamilySpec{Name: fam}
		for _, tag := range sortedKeys(w.tags[fam]) {
			ts.TagNames = append(ts.TagNames, tag)
			tf.Tags = append(tf.Tags, w.tags[fam][tag])
		}
		spec = append(spec, ts)
		el.TagFamilies = append(el.TagFamilies, tf)
	}
	req := &streamv1.WriteRequest{Element: el}
	if full {
		req.Metadata, req.TagFamilySpec = w.md, spec
	}
	req.MessageId = nanoClock()
	return req
}

// flushResult is what a flush saw: how many messages it sent and the
// status of every response.
type flushResult struct {
	sent     int
	statuses map[string]int // status → responses
	ids      []uint64       // message ids sent
	answered []uint64       // message ids answered
}

// oapFlush is one doFlush: a new Write stream with flushTimeout as its
// deadline; metadata and spec on a message whose (group, name) differs
// from the previous message's, values only otherwise; then half-close and
// wait until the server ends the stream. Only this goroutine sends; one
// goroutine receives.
func oapFlush[Req, Res any, W oapWrite[Req]](
	open func(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[Req, Res], error),
	answer func(*Res) (uint64, string), writes []W,
) (flushResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), oapFlushTimeout)
	defer cancel()
	ws, err := open(ctx)
	if err != nil {
		return flushResult{}, fmt.Errorf("open Write stream: %w", err)
	}
	type recvEnd struct {
		ids      []uint64
		statuses map[string]int
		err      error
	}
	recvDone := make(chan recvEnd, 1)
	go func() {
		end := recvEnd{statuses: map[string]int{}}
		for {
			resp, err := ws.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					end.err = err
				}
				recvDone <- end
				return
			}
			id, st := answer(resp)
			end.ids = append(end.ids, id)
			end.statuses[st]++
		}
	}()
	res := flushResult{}
	var prev *commonv1.Metadata
	for _, w := range writes {
		md := w.metadata()
		full := prev == nil || prev.GetGroup() != md.GetGroup() || prev.GetName() != md.GetName()
		if full {
			prev = md
		}
		req := w.build(full)
		if err := ws.Send(req); err != nil {
			// The stream ended; Recv says why.
			break
		}
		res.sent++
		res.ids = append(res.ids, messageID(req))
	}
	closeErr := ws.CloseSend()
	// The server ends the stream once it has answered everything; the
	// deadline bounds the wait.
	end := <-recvDone
	res.statuses, res.answered = end.statuses, end.ids
	switch {
	case end.err != nil:
		return res, fmt.Errorf("the server did not end the stream cleanly: %w", end.err)
	case closeErr != nil:
		return res, fmt.Errorf("half-close: %w", closeErr)
	}
	return res, nil
}

// messageID is what a write's answer is matched by: its message id, or a
// trace write's version.
func messageID(req any) uint64 {
	if r, ok := req.(interface{ GetMessageId() uint64 }); ok {
		return r.GetMessageId()
	}
	return req.(interface{ GetVersion() uint64 }).GetVersion()
}

func flushMeasures(conn *grpc.ClientConn, writes []*oapMeasureWrite) (flushResult, error) {
	return oapFlush(measurev1.NewMeasureServiceClient(conn).Write,
		func(r *measurev1.WriteResponse) (uint64, string) { return r.GetMessageId(), r.GetStatus() }, writes)
}

func flushStreams(conn *grpc.ClientConn, writes []*oapStreamWrite) (flushResult, error) {
	return oapFlush(streamv1.NewStreamServiceClient(conn).Write,
		func(r *streamv1.WriteResponse) (uint64, string) { return r.GetMessageId(), r.GetStatus() }, writes)
}

// oapLargestRange is AbstractBanyanDBDAO.LARGEST_TIME_RANGE, [0,
// Instant.ofEpochSecond(0, Long.MAX_VALUE)] in milliseconds, as
// TimestampRange.build encodes it.
var oapLargestRange = &modelv1.TimeRange{
	Begin: &timestamppb.Timestamp{},
	End:   &timestamppb.Timestamp{Seconds: 9223372036, Nanos: 854_000_000},
}

// oapMultiGet is BanyanDBMetricsDAO.multiGet's query: every tag and field
// of the schema projected, the entity ids in one IN condition (with the
// default match option PairQueryCondition always sets), no limit.
func oapMultiGet(ctx context.Context, conn *grpc.ClientConn, m *oapModel, tr *modelv1.TimeRange, entityIDs []string) (*measurev1.QueryResponse, error) {
	proj := m.projection()
	var fields []string
	for _, c := range m.cols {
		if c.field != 0 {
			fields = append(fields, c.name)
		}
	}
	return measurev1.NewMeasureServiceClient(conn).Query(ctx, &measurev1.QueryRequest{
		Groups:          []string{m.group},
		Name:            m.name,
		TimeRange:       tr,
		TagProjection:   proj,
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: fields},
		Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
			Name:        "entity_id",
			Op:          modelv1.Condition_BINARY_OP_IN,
			Value:       &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: entityIDs}}},
			MatchOption: &modelv1.Condition_MatchOption{},
		}}},
	})
}

// projection projects every tag of the model, families in alphabetical
// order as OAP lists them.
func (m *oapModel) projection() *modelv1.TagProjection {
	byFamily := map[string][]string{}
	for tag, fam := range m.familyOf() {
		byFamily[fam] = append(byFamily[fam], tag)
	}
	proj := &modelv1.TagProjection{}
	for _, fam := range sortedKeys(byFamily) {
		proj.TagFamilies = append(proj.TagFamilies, &modelv1.TagProjection_TagFamily{Name: fam, Tags: byFamily[fam]})
	}
	return proj
}
