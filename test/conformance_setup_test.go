package test

import (
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
)

// conformanceSetup is setup.yaml: registry objects and data sets, each
// object kept as JSON for protojson.
type conformanceSetup struct {
	Groups            []json.RawMessage `json:"groups"`
	Measures          []json.RawMessage `json:"measures"`
	Streams           []json.RawMessage `json:"streams"`
	Traces            []json.RawMessage `json:"traces"`
	PropertySchemas   []json.RawMessage `json:"propertySchemas"`
	IndexRules        []json.RawMessage `json:"indexRules"`
	IndexRuleBindings []json.RawMessage `json:"indexRuleBindings"`
	TopNAggregations  []json.RawMessage `json:"topNAggregations"`
	// Properties are applied in order (property.v1.Property each).
	Properties []json.RawMessage `json:"properties"`
	// Data sets: points of a measure, elements of a stream or spans of a
	// trace, a minute apart, the last at the runner's base time plus
	// offset. A span's timestamp tag values are set to its time.
	Data []struct {
		Measure  json.RawMessage   `json:"measure"`
		Stream   json.RawMessage   `json:"stream"`
		Trace    json.RawMessage   `json:"trace"`
		Offset   string            `json:"offset"`
		Points   []json.RawMessage `json:"points"`
		Elements []json.RawMessage `json:"elements"`
		Spans    []json.RawMessage `json:"spans"`
	} `json:"data"`
}

// createAll creates each raw registry object of kind what as a T with
// create.
func createAll[T proto.Message](t *testing.T, what string, raws []json.RawMessage, newT func() T, create func(T) error) {
	t.Helper()
	for _, raw := range raws {
		if err := create(fromJSON(t, what, raw, newT())); err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
}

// loadSetup creates setup's schema and writes its data through conn.
func loadSetup(t *testing.T, conn *grpc.ClientConn, setup *conformanceSetup) {
	t.Helper()
	ctx := ctxT(t)
	createAll(t, "group", setup.Groups, func() *commonv1.Group { return &commonv1.Group{} }, func(g *commonv1.Group) error {
		_, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: g})
		return err
	})
	createAll(t, "measure", setup.Measures, func() *databasev1.Measure { return &databasev1.Measure{} }, func(m *databasev1.Measure) error {
		_, err := databasev1.NewMeasureRegistryServiceClient(conn).Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: m})
		return err
	})
	createAll(t, "stream", setup.Streams, func() *databasev1.Stream { return &databasev1.Stream{} }, func(s *databasev1.Stream) error {
		_, err := databasev1.NewStreamRegistryServiceClient(conn).Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: s})
		return err
	})
	createAll(t, "trace", setup.Traces, func() *databasev1.Trace { return &databasev1.Trace{} }, func(tr *databasev1.Trace) error {
		_, err := databasev1.NewTraceRegistryServiceClient(conn).Create(ctx, &databasev1.TraceRegistryServiceCreateRequest{Trace: tr})
		return err
	})
	createAll(t, "property schema", setup.PropertySchemas, func() *databasev1.Property { return &databasev1.Property{} }, func(p *databasev1.Property) error {
		_, err := databasev1.NewPropertyRegistryServiceClient(conn).Create(ctx, &databasev1.PropertyRegistryServiceCreateRequest{Property: p})
		return err
	})
	createAll(t, "index rule", setup.IndexRules, func() *databasev1.IndexRule { return &databasev1.IndexRule{} }, func(r *databasev1.IndexRule) error {
		_, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: r})
		return err
	})
	createAll(t, "index rule binding", setup.IndexRuleBindings, func() *databasev1.IndexRuleBinding { return &databasev1.IndexRuleBinding{} },
		func(b *databasev1.IndexRuleBinding) error {
			_, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx,
				&databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: b})
			return err
		})
	createAll(t, "top-N aggregation", setup.TopNAggregations, func() *databasev1.TopNAggregation { return &databasev1.TopNAggregation{} },
		func(a *databasev1.TopNAggregation) error {
			_, err := databasev1.NewTopNAggregationRegistryServiceClient(conn).Create(ctx,
				&databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: a})
			return err
		})
	createAll(t, "property", setup.Properties, func() *propertyv1.Property { return &propertyv1.Property{} }, func(p *propertyv1.Property) error {
		_, err := propertyv1.NewPropertyServiceClient(conn).Apply(ctx, &propertyv1.ApplyRequest{Property: p})
		return err
	})
	for _, d := range setup.Data {
		var offset time.Duration
		if d.Offset != "" {
			var err error
			if offset, err = time.ParseDuration(d.Offset); err != nil {
				t.Fatal(err)
			}
		}
		at := func(i, n int) *timestamppb.Timestamp {
			return timestamppb.New(baseTime.Add(offset - time.Duration(n-i-1)*time.Minute))
		}
		switch {
		case d.Stream != nil:
			md := fromJSON(t, "data set stream", d.Stream, &commonv1.Metadata{})
			writeDataSet(t, md.GetName(), d.Elements, func(i int, raw json.RawMessage) *streamv1.WriteRequest {
				e := fromJSON(t, "element", raw, &streamv1.ElementValue{})
				e.Timestamp = at(i, len(d.Elements))
				return &streamv1.WriteRequest{Element: e, MessageId: uint64(i + 1), Metadata: firstOnly(i, md)}
			}, func(reqs []*streamv1.WriteRequest) ([]*streamv1.WriteResponse, error) { return sendStream(t, conn, reqs) },
				func(r *streamv1.WriteResponse) string { return r.GetStatus() })
		case d.Trace != nil:
			md := fromJSON(t, "data set trace", d.Trace, &commonv1.Metadata{})
			writeDataSet(t, md.GetName(), d.Spans, func(i int, raw json.RawMessage) *tracev1.WriteRequest {
				w := fromJSON(t, "span", raw, &tracev1.WriteRequest{})
				for _, v := range w.GetTags() {
					if v.GetTimestamp() != nil {
						v.Value = &modelv1.TagValue_Timestamp{Timestamp: at(i, len(d.Spans))}
					}
				}
				w.Metadata, w.Version = md, uint64(i+1)
				return w
			}, func(reqs []*tracev1.WriteRequest) ([]*tracev1.WriteResponse, error) {
				ws, err := tracev1.NewTraceServiceClient(conn).Write(ctxT(t))
				return sendAll(t, ws, err, reqs)
			}, func(r *tracev1.WriteResponse) string { return r.GetStatus() })
		default:
			md := fromJSON(t, "data set measure", d.Measure, &commonv1.Metadata{})
			writeDataSet(t, md.GetName(), d.Points, func(i int, raw json.RawMessage) *measurev1.WriteRequest {
				p := fromJSON(t, "data point", raw, &measurev1.DataPointValue{})
				p.Timestamp = at(i, len(d.Points))
				return &measurev1.WriteRequest{DataPoint: p, MessageId: uint64(i + 1), Metadata: firstOnly(i, md)}
			}, func(reqs []*measurev1.WriteRequest) ([]*measurev1.WriteResponse, error) { return writeMeasures(t, conn, reqs) },
				func(r *measurev1.WriteResponse) string { return r.GetStatus() })
		}
	}
}

// firstOnly is md for the first message of a write stream: the metadata
// stays in force for the ones after it.
func firstOnly(i int, md *commonv1.Metadata) *commonv1.Metadata {
	if i == 0 {
		return md
	}
	return nil
}

// writeDataSet builds a write request of each raw value, sends them on
// one stream and fails unless every one succeeded.
func writeDataSet[Req, Resp any](t *testing.T, name string, raws []json.RawMessage, build func(int, json.RawMessage) *Req,
	send func([]*Req) ([]*Resp, error), statusOf func(*Resp) string,
) {
	t.Helper()
	reqs := make([]*Req, len(raws))
	for i, raw := range raws {
		reqs[i] = build(i, raw)
	}
	resps, err := send(reqs)
	if err != nil || len(resps) != len(reqs) {
		t.Fatalf("write %s: %d answers for %d values (%v)", name, len(resps), len(reqs), err)
	}
	for i, r := range resps {
		if s := statusOf(r); s != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("write %s value %d: %s", name, i, s)
		}
	}
}
