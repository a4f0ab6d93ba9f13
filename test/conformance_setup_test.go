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
			reqs := make([]*streamv1.WriteRequest, len(d.Elements))
			for i, raw := range d.Elements {
				e := fromJSON(t, "element", raw, &streamv1.ElementValue{})
				e.Timestamp = at(i, len(d.Elements))
				reqs[i] = &streamv1.WriteRequest{Element: e, MessageId: uint64(i + 1), Metadata: firstOnly(i, md)}
			}
			resps, err := sendStream(t, conn, reqs)
			checkDataSet(t, md.GetName(), len(reqs), resps, err)
		case d.Trace != nil:
			md := fromJSON(t, "data set trace", d.Trace, &commonv1.Metadata{})
			reqs := make([]*tracev1.WriteRequest, len(d.Spans))
			for i, raw := range d.Spans {
				w := fromJSON(t, "span", raw, &tracev1.WriteRequest{})
				for _, v := range w.GetTags() {
					if v.GetTimestamp() != nil {
						v.Value = &modelv1.TagValue_Timestamp{Timestamp: at(i, len(d.Spans))}
					}
				}
				w.Metadata, w.Version = md, uint64(i+1)
				reqs[i] = w
			}
			ws, err := tracev1.NewTraceServiceClient(conn).Write(ctxT(t))
			resps, err := sendAll(t, ws, err, reqs)
			checkDataSet(t, md.GetName(), len(reqs), resps, err)
		default:
			md := fromJSON(t, "data set measure", d.Measure, &commonv1.Metadata{})
			reqs := make([]*measurev1.WriteRequest, len(d.Points))
			for i, raw := range d.Points {
				p := fromJSON(t, "data point", raw, &measurev1.DataPointValue{})
				p.Timestamp = at(i, len(d.Points))
				reqs[i] = &measurev1.WriteRequest{DataPoint: p, MessageId: uint64(i + 1), Metadata: firstOnly(i, md)}
			}
			resps, err := writeMeasures(t, conn, reqs)
			checkDataSet(t, md.GetName(), len(reqs), resps, err)
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

// checkDataSet fails unless each of the n values written to name got an
// answer and every answer is a success.
func checkDataSet[Resp interface{ GetStatus() string }](t *testing.T, name string, n int, resps []Resp, err error) {
	t.Helper()
	if err != nil || len(resps) != n {
		t.Fatalf("write %s: %d answers for %d values (%v)", name, len(resps), n, err)
	}
	for i, r := range resps {
		if s := r.GetStatus(); s != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("write %s value %d: %s", name, i, s)
		}
	}
}
