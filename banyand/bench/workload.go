package bench

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// Names in the schema the tool defines (see schema.go).
const (
	tagService  = "service"
	tagInstance = "instance"
	tagPayload  = "payload"
	fieldValue  = "value"
	fieldScore  = "score"
	// instancesPerService shapes entities like a real deployment: entity e
	// is instance e mod 10 of service e div 10.
	instancesPerService = 10
)

// messages derives every message of a run from its seq, so the writers
// share no state and verification can recompute what was written.
type messages struct {
	md         *commonv1.Metadata
	entities   int64
	baseMillis int64
	runID      string  // prefix of stream element ids
	nonce      float64 // measure score field: marks this run's points
	payload    []byte  // shared, never modified
	measure    bool    // the run writes data points
	shape      string  // ShapeRealistic or ShapeLight (shape.go)
	// data is the data family's values in schema order (dataTags).
	data []*modelv1.TagValue
	// spansPerTrace > 0: the run writes spans, this many a trace (trace.go).
	spansPerTrace int64
	// spec: a stream's first request carries the spec (--flush-size) and
	// every request lists its values in the spec's order (see encodeSpec).
	spec bool
	// tags caches writtenTags per entity (read-only once built), so the
	// writers do not spend the client's CPU share rebuilding them; nil
	// when there are too many entities to keep.
	tags [][]*modelv1.TagValue
	// enc is what the requests share, encoded (see wire.go).
	enc encoded
	// oap is set for --shape oap streams and measures (oap.go).
	oap *oapEncoding
	// stepMillis is the time between an entity's messages: 1, or an
	// oap metric's time bucket.
	stepMillis int64
}

// maxCachedEntities bounds the entity tag cache (about 200 bytes each).
const maxCachedEntities = 1 << 16

// cacheEntityTags fills m.tags; call it before the writers start.
func (m *messages) cacheEntityTags() {
	if m.entities > maxCachedEntities || m.oap != nil {
		return
	}
	m.tags = make([][]*modelv1.TagValue, m.entities)
	for e := range m.tags {
		m.tags[e] = m.writtenTags(int64(e))
	}
}

func (m *messages) entity(seq int64) int64 { return seq % m.entities }

func (m *messages) millis(seq int64) int64 { return m.baseMillis + seq/m.entities*m.stepMillis }

func (m *messages) elementID(seq int64) string {
	if m.oap != nil {
		return m.oapElementID(seq)
	}
	return m.runID + "-" + strconv.FormatInt(seq, 10)
}

// seqOfElement parses an element id of this run; -1 if it is not one.
func (m *messages) seqOfElement(id string) int64 {
	rest, ok := strings.CutPrefix(id, m.runID+"-")
	if !ok {
		return -1
	}
	seq, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || seq < 0 {
		return -1
	}
	return seq
}

// entityCriteria selects entity e by its entity tags, which lets the
// server seek to the series instead of scanning.
func (m *messages) entityCriteria(e int64) *modelv1.Criteria {
	if m.oap != nil {
		return m.oapEntityCriteria(e)
	}
	tags := m.entityTags(e)
	cond := func(name string, v *modelv1.TagValue) *modelv1.Criteria {
		return &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
			Name: name, Op: modelv1.Condition_BINARY_OP_EQ, Value: v,
		}}}
	}
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{
		Op:    modelv1.LogicalExpression_LOGICAL_OP_AND,
		Left:  cond(tagService, tags[0]),
		Right: cond(tagInstance, tags[1]),
	}}}
}

// entityProjection projects the entity tags, which verification checks by
// name: with the spec the requests name them in another order than the
// schema's, and each must read back under its own name.
func (m *messages) entityProjection(family string) *modelv1.TagProjection {
	if m.oap != nil {
		return m.oapEntityProjection()
	}
	return &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
		{Name: family, Tags: []string{tagService, tagInstance}},
	}}
}

// hasEntityTags reports whether fams, a result's projected tags, hold
// entity e's service and instance under those names.
func (m *messages) hasEntityTags(e int64, fams []*modelv1.TagFamily) bool {
	if m.oap != nil {
		return m.oapHasEntityTags(e, fams)
	}
	want := m.entityTags(e)
	found := 0
	for _, f := range fams {
		for _, t := range f.GetTags() {
			switch t.GetKey() {
			case tagService:
				if t.GetValue().GetStr().GetValue() != want[0].GetStr().GetValue() {
					return false
				}
				found++
			case tagInstance:
				if t.GetValue().GetInt() == nil || t.GetValue().GetInt().GetValue() != want[1].GetInt().GetValue() {
					return false
				}
				found++
			}
		}
	}
	return found == 2
}

// writeClient is one open bidi Write stream. send is called by the send
// loop only, recv by the receive loop only.
type writeClient interface {
	// send writes message seq as message id; the first message of a
	// stream carries the metadata. It returns the request's size.
	send(id uint64, seq int64) (int, error)
	recv() (id uint64, status string, err error)
	closeSend() error
}

// page is one verification query: entity e, timestamps [fromMs, toMs),
// offset/limit. It returns the seqs of this run's messages it found and
// how many results the page held in all.
type pageQuery struct {
	entity        int64
	fromMs, toMs  int64
	offset, limit uint32
}

// workload is what differs between streams and measures.
type workload interface {
	openWrite(ctx context.Context) (writeClient, error)
	queryPage(ctx context.Context, q pageQuery) (seqs []int64, results int, err error)
}

// timeRange is the query range of [fromMs, toMs): BanyanDB's ranges hold
// both ends, so it ends a millisecond before toMs.
func timeRange(fromMs, toMs int64) *modelv1.TimeRange {
	ts := func(ms int64) *timestamppb.Timestamp {
		return &timestamppb.Timestamp{Seconds: ms / 1000, Nanos: int32(ms%1000) * 1e6}
	}
	return &modelv1.TimeRange{Begin: ts(fromMs), End: ts(toMs - 1)}
}

// streamWorkload writes elements with a run-unique element id.
type streamWorkload struct {
	msgs   *messages
	client streamv1.StreamServiceClient
}

func newStreamWorkload(m *messages, conn grpc.ClientConnInterface) *streamWorkload {
	return &streamWorkload{msgs: m, client: streamv1.NewStreamServiceClient(conn)}
}

func (w *streamWorkload) openWrite(ctx context.Context) (writeClient, error) {
	ws, err := w.client.Write(ctx)
	if w.msgs.oap != nil {
		return openWire(ws, err, w.msgs.oapStreamRequest)
	}
	return openWire(ws, err, w.msgs.streamRequest)
}

// openWire wraps a Write stream just opened (or its error) in a wireWriter.
func openWire(ws grpc.ClientStream, err error, encode func(id uint64, seq int64, withMetadata bool) []byte) (writeClient, error) {
	if err != nil {
		return nil, err
	}
	return &wireWriter{ws: ws, encode: encode, first: true}, nil
}

// wireWriter sends requests encoded by encode and reads the responses at
// the wire level (see wire.go).
type wireWriter struct {
	ws     grpc.ClientStream
	encode func(id uint64, seq int64, withMetadata bool) []byte
	first  bool // the next message is the stream's first: it carries metadata
}

func (s *wireWriter) send(id uint64, seq int64) (int, error) {
	b := s.encode(id, seq, s.first)
	s.first = false
	return len(b), s.ws.SendMsg(&wire.Frame{Raw: b})
}

func (s *wireWriter) recv() (uint64, string, error) {
	var r wireResponse
	err := s.ws.RecvMsg(&r)
	return r.id, r.status, err
}

func (s *wireWriter) closeSend() error { return s.ws.CloseSend() }

func (w *streamWorkload) queryPage(ctx context.Context, q pageQuery) ([]int64, int, error) {
	resp, err := w.client.Query(ctx, &streamv1.QueryRequest{
		Groups:    []string{w.msgs.md.GetGroup()},
		Name:      w.msgs.md.GetName(),
		TimeRange: timeRange(q.fromMs, q.toMs),
		Criteria:  w.msgs.entityCriteria(q.entity),
		Offset:    q.offset,
		Limit:     q.limit,
		OrderBy:   &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_ASC},
		// The element id and timestamp identify a message; the entity
		// tags are checked by name; the payload would only make pages
		// bigger.
		Projection: w.msgs.entityProjection("searchable"),
	})
	if err != nil {
		return nil, 0, err
	}
	var seqs []int64
	for _, el := range resp.GetElements() {
		seq := w.msgs.seqOfAnswered(q.entity, el)
		if seq < 0 || w.msgs.entity(seq) != q.entity || el.GetTimestamp().AsTime().UnixMilli() != w.msgs.millis(seq) ||
			!w.msgs.hasEntityTags(q.entity, el.GetTagFamilies()) {
			continue
		}
		seqs = append(seqs, seq)
	}
	return seqs, len(resp.GetElements()), nil
}

// measureWorkload writes data points, each a unique (entity, timestamp)
// pair, whose int field is the seq and float field the run's nonce.
type measureWorkload struct {
	msgs   *messages
	client measurev1.MeasureServiceClient
}

func newMeasureWorkload(m *messages, conn grpc.ClientConnInterface) *measureWorkload {
	return &measureWorkload{msgs: m, client: measurev1.NewMeasureServiceClient(conn)}
}

func (w *measureWorkload) openWrite(ctx context.Context) (writeClient, error) {
	ws, err := w.client.Write(ctx)
	if w.msgs.oap != nil {
		return openWire(ws, err, w.msgs.oapMeasureRequest)
	}
	return openWire(ws, err, w.msgs.measureRequest)
}

func (w *measureWorkload) fieldNames() []string {
	if w.msgs.oap != nil {
		return w.msgs.oapFieldNames()
	}
	return []string{fieldValue, fieldScore}
}

func (w *measureWorkload) queryPage(ctx context.Context, q pageQuery) ([]int64, int, error) {
	resp, err := w.client.Query(ctx, &measurev1.QueryRequest{
		Groups:          []string{w.msgs.md.GetGroup()},
		Name:            w.msgs.md.GetName(),
		TimeRange:       timeRange(q.fromMs, q.toMs),
		Criteria:        w.msgs.entityCriteria(q.entity),
		TagProjection:   w.msgs.entityProjection("default"),
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: w.fieldNames()},
		Offset:          q.offset,
		Limit:           q.limit,
		OrderBy:         &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_ASC},
	})
	if err != nil {
		return nil, 0, err
	}
	var seqs []int64
	for _, dp := range resp.GetDataPoints() {
		k := dp.GetTimestamp().AsTime().UnixMilli() - w.msgs.baseMillis
		if k < 0 || k%w.msgs.stepMillis != 0 {
			continue
		}
		seq := k/w.msgs.stepMillis*w.msgs.entities + q.entity
		if w.msgs.oap != nil {
			// Entity ids carry the run id: a point of the entity is this run's.
			if w.msgs.oapHasFields(seq, dp) && w.msgs.oapHasEntityTags(q.entity, dp.GetTagFamilies()) {
				seqs = append(seqs, seq)
			}
			continue
		}
		var value int64
		var score float64
		for _, f := range dp.GetFields() {
			switch f.GetName() {
			case fieldValue:
				value = f.GetValue().GetInt().GetValue()
			case fieldScore:
				score = f.GetValue().GetFloat().GetValue()
			}
		}
		// A point of another run at the same (entity, time) is not ours;
		// one whose values are not under their names was written wrong.
		if value != seq || score != w.msgs.nonce || !w.msgs.hasEntityTags(q.entity, dp.GetTagFamilies()) {
			continue
		}
		seqs = append(seqs, seq)
	}
	return seqs, len(resp.GetDataPoints()), nil
}
