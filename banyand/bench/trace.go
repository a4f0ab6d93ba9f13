package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// Traces (--kind trace) are OAP-shaped segments: a few indexed tags
// (trace and span id, service and instance, endpoint, start time,
// duration, error state) and the span itself, --payload-bytes of it.
// Message seq is a span of entity e = seq mod E, round r = seq div E
// (timestamp base + r ms): the spans of rounds r..r+k-1 of one entity
// form a trace, k = --spans-per-trace. A span's version is its message id.

// Names of the tool's trace schema.
const (
	tagTraceID   = "trace_id"
	tagSpanID    = "span_id"
	tagEndpoint  = "endpoint"
	tagStartTime = "start_time"
	tagDuration  = "duration"
	tagIsError   = "is_error"
)

// traceSchema is the tool's trace: its tags in schema order.
func traceSchema(md *commonv1.Metadata) *databasev1.Trace {
	s, i := databasev1.TagType_TAG_TYPE_STRING, databasev1.TagType_TAG_TYPE_INT
	return &databasev1.Trace{
		Metadata: proto.CloneOf(md),
		Tags: []*databasev1.TraceTagSpec{
			{Name: tagTraceID, Type: s}, {Name: tagSpanID, Type: s},
			{Name: tagService, Type: s}, {Name: tagInstance, Type: i}, {Name: tagEndpoint, Type: s},
			{Name: tagStartTime, Type: databasev1.TagType_TAG_TYPE_TIMESTAMP},
			{Name: tagDuration, Type: i}, {Name: tagIsError, Type: i},
		},
		TraceIdTagName: tagTraceID, SpanIdTagName: tagSpanID, TimestampTagName: tagStartTime,
	}
}

func (m *messages) traceID(seq int64) string {
	e, r := m.entity(seq), seq/m.entities
	return m.runID + "-" + strconv.FormatInt(e, 10) + "-" + strconv.FormatInt(r/m.spansPerTrace, 10)
}

// spanTags are message seq's tag values in schema order, each encoded.
func (m *messages) spanTags(seq int64) [][]byte {
	e := m.entity(seq)
	strTag := func(s string) []byte { return appendField(nil, 2, appendField(nil, 1, []byte(s))) }
	intTag := func(v int64) []byte {
		var msg []byte // model.v1.Int, zero left out as proto.Marshal does
		if v != 0 {
			msg = protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(v))
		}
		return appendField(nil, 4, msg)
	}
	var ts [24]byte
	return [][]byte{
		strTag(m.traceID(seq)),
		strTag(m.elementID(seq)),
		strTag("svc-" + strconv.FormatInt(e/instancesPerService, 10)),
		intTag(e % instancesPerService),
		strTag("/endpoint-" + strconv.FormatInt(seq%8, 10)),
		appendField(nil, 7, m.timestamp(ts[:0], seq)),
		intTag(seq % 1000),
		intTag(boolInt(seq%50 == 0)),
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// traceSpecOrder is where each schema tag goes in the spec's
// (alphabetical) order, as OAP's TraceWrite names them.
func traceSpecOrder(md *commonv1.Metadata) (names []string, order []int) {
	tags := traceSchema(md).GetTags()
	order = make([]int, len(tags))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(tags[a].GetName(), tags[b].GetName()) })
	for _, i := range order {
		names = append(names, tags[i].GetName())
	}
	return names, order
}

// traceRequest encodes message seq as a trace WriteRequest with version
// id: metadata (1) and, with --flush-size, the tag spec (5) when
// withMetadata; the tags (2) in the schema's or the spec's order; the
// span (3); the version (4).
func (m *messages) traceRequest(id uint64, seq int64, withMetadata bool) []byte {
	tags := m.spanTags(seq)
	if m.spec {
		ordered := make([][]byte, len(tags))
		for i, pos := range m.enc.traceOrder {
			ordered[i] = tags[pos]
		}
		tags = ordered
	}
	var b []byte
	if withMetadata {
		b = appendField(b, 1, m.enc.metadata)
	}
	for _, t := range tags {
		b = appendField(b, 2, t)
	}
	if len(m.payload) > 0 {
		b = appendField(b, 3, m.payload)
	}
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, id)
	if withMetadata && m.spec {
		b = appendField(b, 5, m.enc.traceSpec)
	}
	return b
}

// traceResponse is the part of a trace write response the tool reads:
// the version it echoes is the message id.
type traceResponse wireResponse

// UnmarshalWire implements wire.Unmarshaler.
func (r *traceResponse) UnmarshalWire(data mem.BufferSlice) error {
	return (*wireResponse)(r).parse(data, wire.ParseTraceWriteResponse)
}

// traceWorkload writes spans.
type traceWorkload struct {
	msgs   *messages
	client tracev1.TraceServiceClient
}

func newTraceWorkload(m *messages, conn grpc.ClientConnInterface) *traceWorkload {
	return &traceWorkload{msgs: m, client: tracev1.NewTraceServiceClient(conn)}
}

func (w *traceWorkload) openWrite(ctx context.Context) (writeClient, error) {
	ws, err := w.client.Write(ctx)
	if err != nil {
		return nil, err
	}
	return &traceWriter{wireWriter{ws: ws, encode: w.msgs.traceRequest, first: true}}, nil
}

// traceWriter is a wireWriter that reads trace write responses.
type traceWriter struct{ wireWriter }

func (s *traceWriter) recv() (uint64, string, error) {
	var r traceResponse
	err := s.ws.RecvMsg(&r)
	return r.id, r.status, err
}

// queryPage reads back the traces of entity e with a span in the time
// range the way OAP looks a trace up: one query a trace, by trace id
// (a seek to the trace's series; a query over a time range without the
// trace id reads every span of the range, as banyand keeps no tag
// indexes). The seqs are those of every span read that is entity e's,
// with its timestamp, in its trace, with the span's bytes; the count is
// 0, so the caller never pages.
func (w *traceWorkload) queryPage(ctx context.Context, q pageQuery) ([]int64, int, error) {
	m := w.msgs
	var seqs []int64
	seen := map[string]bool{}
	for ms := q.fromMs; ms < q.toMs; ms++ {
		id := m.traceID((ms-m.baseMillis)*m.entities + q.entity)
		if seen[id] || ms < m.baseMillis {
			continue
		}
		seen[id] = true
		resp, err := w.client.Query(ctx, &tracev1.QueryRequest{
			Groups: []string{m.md.GetGroup()}, Name: m.md.GetName(),
			Criteria:      &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: tagTraceID, Op: modelv1.Condition_BINARY_OP_EQ, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: id}}}}}},
			TagProjection: []string{tagStartTime},
		})
		if err != nil {
			return nil, 0, err
		}
		for _, tr := range resp.GetTraces() {
			for _, sp := range tr.GetSpans() {
				seq := m.seqOfElement(sp.GetSpanId())
				if seq < 0 || m.entity(seq) != q.entity || m.traceID(seq) != tr.GetTraceId() || string(sp.GetSpan()) != string(m.payload) ||
					len(sp.GetTags()) != 1 || sp.GetTags()[0].GetValue().GetTimestamp().AsTime().UnixMilli() != m.millis(seq) {
					continue
				}
				seqs = append(seqs, seq)
			}
		}
	}
	return seqs, 0, nil
}

func ensureTrace(ctx context.Context, conn grpc.ClientConnInterface, md *commonv1.Metadata) error {
	c := databasev1.NewTraceRegistryServiceClient(conn)
	want := traceSchema(md)
	got, err := c.Get(ctx, &databasev1.TraceRegistryServiceGetRequest{Metadata: md})
	switch {
	case isCode(err, codes.NotFound):
		if _, err := c.Create(ctx, &databasev1.TraceRegistryServiceCreateRequest{Trace: want}); err != nil && !isCode(err, codes.AlreadyExists) {
			return fmt.Errorf("create trace %s/%s: %w", md.GetGroup(), md.GetName(), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get trace %s/%s: %w", md.GetGroup(), md.GetName(), err)
	case !sameTraceTags(got.GetTrace(), want):
		return fmt.Errorf("trace %s/%s exists with other tags than the tool writes: choose another --name", md.GetGroup(), md.GetName())
	}
	return nil
}

func sameTraceTags(a, b *databasev1.Trace) bool {
	return slices.EqualFunc(a.GetTags(), b.GetTags(), func(x, y *databasev1.TraceTagSpec) bool {
		return x.GetName() == y.GetName() && x.GetType() == y.GetType()
	}) && a.GetTraceIdTagName() == b.GetTraceIdTagName() && a.GetSpanIdTagName() == b.GetSpanIdTagName() &&
		a.GetTimestampTagName() == b.GetTimestampTagName()
}
