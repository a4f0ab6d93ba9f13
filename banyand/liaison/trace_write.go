package liaison

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/wire"
)

// The trace data model's write path (docs/design/traces.md): a trace is a
// layout of one unnamed tag family (the schema's tags), whose entity is
// the trace id tag, so the series key and shard are the trace's; a span's
// id and timestamp are read from its span id and timestamp tags.
var traceModel = &model{
	name: "trace", topic: queue.TopicTraceWrite, value: "span",
	parse:       wire.ParseTraceRequest,
	canonical:   canonical(func() *tracev1.WriteRequest { return new(tracev1.WriteRequest) }),
	decodeSpec:  decodeTraceSpec,
	appendValue: wire.AppendSpanValue,
	span:        true,
	appendResponse: func(b []byte, p *pendingWrite, status string) []byte {
		return wire.AppendTraceWriteResponse(b, p.metadataRaw, p.metadata != nil, p.messageID, status)
	},
	lookup: func(s *schemaSnapshot, k nameKey) *layout {
		if l := s.traces[k]; l != nil {
			return l.layout
		}
		return nil
	},
}

// spanTags are the positions of a trace's span id and timestamp tags.
type spanTags struct {
	id, timestamp  int
	idName, tsName string
}

// traceLayout is a trace's layout and schema.
type traceLayout struct {
	*layout
	schema *databasev1.Trace
}

func newTraceLayout(g *commonv1.Group, t *databasev1.Trace) (*traceLayout, error) {
	tags := make([]*databasev1.TagSpec, len(t.GetTags()))
	pos := map[string]int{}
	for i, tag := range t.GetTags() {
		tags[i] = &databasev1.TagSpec{Name: tag.GetName(), Type: tag.GetType()}
		pos[tag.GetName()] = i
	}
	md := t.GetMetadata()
	l, err := newLayout(md, g, []*databasev1.TagFamilySpec{{Tags: tags}}, &databasev1.Entity{TagNames: []string{t.GetTraceIdTagName()}})
	if err != nil {
		return nil, err
	}
	want := func(name, what string, types ...databasev1.TagType) (int, error) {
		i, ok := pos[name]
		if !ok {
			return 0, fmt.Errorf("%s tag %q is not a tag of %s/%s", what, name, md.GetGroup(), md.GetName())
		}
		for _, typ := range types {
			if tags[i].GetType() == typ {
				return i, nil
			}
		}
		return 0, fmt.Errorf("%s tag %q of %s/%s is %v, not %v", what, name, md.GetGroup(), md.GetName(), tags[i].GetType(), types)
	}
	if _, err := want(t.GetTraceIdTagName(), "trace id", databasev1.TagType_TAG_TYPE_STRING, databasev1.TagType_TAG_TYPE_DATA_BINARY); err != nil {
		return nil, err
	}
	st := &spanTags{idName: t.GetSpanIdTagName(), tsName: t.GetTimestampTagName()}
	if st.id, err = want(st.idName, "span id", databasev1.TagType_TAG_TYPE_STRING); err != nil {
		return nil, err
	}
	if st.timestamp, err = want(st.tsName, "timestamp", databasev1.TagType_TAG_TYPE_TIMESTAMP); err != nil {
		return nil, err
	}
	l.span = st
	return &traceLayout{layout: l, schema: t}, nil
}

// decodeTraceSpec decodes a trace write's tag spec (one occurrence: a
// merged request is canonicalised before this) as one unnamed family.
func decodeTraceSpec(raw [][]byte) (*spec, error) {
	var ts tracev1.TagSpec
	for _, b := range raw {
		if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, &ts); err != nil {
			return nil, err
		}
	}
	return &spec{families: []specFamily{{tags: ts.GetTagNames()}}}, nil
}

// prepareSpan is prepare for a span: its tags placed in schema order (by
// the tag spec in force, if any), the rules applied, its span id and
// timestamp read from their tags, and its SpanValue encoded.
func (s *writeStream) prepareSpan(l *layout, req *wire.Request) ([]byte, prepared, *writeError) {
	point := &req.Point
	if n := len(point.Span); n > schema.MaxSpanBytes {
		return nil, prepared{}, invalid("span of %d bytes is over the limit of %d bytes", n, schema.MaxSpanBytes)
	}
	if s.spec.active() {
		var werr *writeError
		if point, werr = s.bySpec(l, point); werr != nil {
			return nil, prepared{}, werr
		}
	}
	prep, werr := l.prepare(point, s.keyBuf)
	if werr != nil {
		return nil, prepared{}, werr
	}
	st := l.span
	id, ok := point.Tag(0, st.id)
	if !ok || id.Kind != wire.KindStr || len(id.Bytes) == 0 {
		return nil, prepared{}, invalid("span id tag %q is missing or empty", st.idName)
	}
	point.ElementID = id.Bytes
	point.Timestamp = nil
	if ts, ok := point.Tag(0, st.timestamp); ok && ts.Kind == wire.KindTimestamp {
		point.Timestamp = ts.Bytes
		point.Seconds, point.Nanos = ts.Time()
	}
	if werr := checkTimestamp(point); werr != nil {
		werr.reason = "timestamp tag " + st.tsName + ": " + werr.reason
		return nil, prepared{}, werr
	}
	s.value = s.m.appendValue(s.value[:0], point)
	return s.value, prep, nil
}

// TraceService serves banyandb.trace.v1.TraceService.
type TraceService struct {
	tracev1.UnimplementedTraceServiceServer
	writer
	query *querier
}

// Write is StreamService.Write for spans: each is answered, in order,
// with its version and status once durable on its data node(s).
func (s *TraceService) Write(srv tracev1.TraceService_WriteServer) error {
	return serveWrites(&s.writer, srv, traceModel)
}
