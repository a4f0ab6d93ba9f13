package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// The conformance runner: each directory under testdata/conformance holds
// a setup.yaml (schema and data) and cases/*.yaml, each a request and the
// answer BanyanDB gives it (or the gRPC code of its refusal), written as
// protobuf JSON in YAML like BanyanDB's own test cases. Answers compare
// ignoring what BanyanDB's runner ignores: a data point's timestamp,
// version and series id, an element's timestamp. Every suite runs on standalone and on a cluster.
func TestConformance(t *testing.T) {
	suites, err := filepath.Glob("testdata/conformance/*/setup.yaml")
	if err != nil || len(suites) == 0 {
		t.Fatalf("no conformance suites (%v)", err)
	}
	for _, setup := range suites {
		dir := filepath.Dir(setup)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cases, err := filepath.Glob(filepath.Join(dir, "cases", "*.yaml"))
			if err != nil || len(cases) == 0 {
				t.Fatalf("suite %s has no cases (%v)", dir, err)
			}
			t.Run("standalone", func(t *testing.T) {
				conn, _ := startStandalone(t, t.TempDir())
				runSuite(t, conn, setup, cases)
			})
			t.Run("cluster", func(t *testing.T) {
				c := startCluster(t, 2, 1)
				runSuite(t, c.liaisons[0], setup, cases)
			})
		})
	}
}

// conformanceSetup is setup.yaml: registry objects and data sets, each
// object kept as JSON for protojson.
type conformanceSetup struct {
	Groups            []json.RawMessage `json:"groups"`
	Measures          []json.RawMessage `json:"measures"`
	Streams           []json.RawMessage `json:"streams"`
	IndexRules        []json.RawMessage `json:"indexRules"`
	IndexRuleBindings []json.RawMessage `json:"indexRuleBindings"`
	TopNAggregations  []json.RawMessage `json:"topNAggregations"`
	Data              []struct {
		Measure  json.RawMessage   `json:"measure"`
		Stream   json.RawMessage   `json:"stream"`
		Offset   string            `json:"offset"`
		Points   []json.RawMessage `json:"points"`
		Elements []json.RawMessage `json:"elements"`
	} `json:"data"`
}

// conformanceCase is one cases/*.yaml.
type conformanceCase struct {
	Measure  json.RawMessage `json:"measure"`
	Stream   json.RawMessage `json:"stream"`
	TopN     json.RawMessage `json:"topN"`
	Want     json.RawMessage `json:"want"`
	WantCode string          `json:"wantCode"`
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(j, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func fromJSON[T proto.Message](t *testing.T, what string, raw json.RawMessage, m T) T {
	t.Helper()
	if err := protojson.Unmarshal(raw, m); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return m
}

func runSuite(t *testing.T, conn *grpc.ClientConn, setupPath string, cases []string) {
	var setup conformanceSetup
	readYAML(t, setupPath, &setup)
	ctx := ctxT(t)
	for _, raw := range setup.Groups {
		g := fromJSON(t, "group", raw, &commonv1.Group{})
		if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: g}); err != nil {
			t.Fatalf("create group: %v", err)
		}
	}
	for _, raw := range setup.Measures {
		m := fromJSON(t, "measure", raw, &databasev1.Measure{})
		if _, err := databasev1.NewMeasureRegistryServiceClient(conn).Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: m}); err != nil {
			t.Fatalf("create measure: %v", err)
		}
	}
	for _, raw := range setup.Streams {
		st := fromJSON(t, "stream", raw, &databasev1.Stream{})
		if _, err := databasev1.NewStreamRegistryServiceClient(conn).Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: st}); err != nil {
			t.Fatalf("create stream: %v", err)
		}
	}
	for _, raw := range setup.IndexRules {
		r := fromJSON(t, "index rule", raw, &databasev1.IndexRule{})
		if _, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: r}); err != nil {
			t.Fatalf("create index rule: %v", err)
		}
	}
	for _, raw := range setup.IndexRuleBindings {
		b := fromJSON(t, "index rule binding", raw, &databasev1.IndexRuleBinding{})
		if _, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: b}); err != nil {
			t.Fatalf("create index rule binding: %v", err)
		}
	}
	for _, raw := range setup.TopNAggregations {
		a := fromJSON(t, "top-N aggregation", raw, &databasev1.TopNAggregation{})
		if _, err := databasev1.NewTopNAggregationRegistryServiceClient(conn).Create(ctx, &databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: a}); err != nil {
			t.Fatalf("create top-N aggregation: %v", err)
		}
	}
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
		if d.Stream != nil {
			writeConformanceStream(t, conn, fromJSON(t, "data set stream", d.Stream, &commonv1.Metadata{}), d.Elements, at)
			continue
		}
		md := fromJSON(t, "data set measure", d.Measure, &commonv1.Metadata{})
		reqs := make([]*measurev1.WriteRequest, len(d.Points))
		for i, raw := range d.Points {
			p := fromJSON(t, "data point", raw, &measurev1.DataPointValue{})
			p.Timestamp = at(i, len(d.Points))
			reqs[i] = &measurev1.WriteRequest{DataPoint: p, MessageId: uint64(i + 1)}
		}
		reqs[0].Metadata = md
		resps, err := writeMeasures(t, conn, reqs)
		if err != nil || len(resps) != len(reqs) {
			t.Fatalf("write %s: %d answers for %d points (%v)", md.GetName(), len(resps), len(reqs), err)
		}
		for _, r := range resps {
			if r.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
				t.Fatalf("write %s point %d: %s", md.GetName(), r.GetMessageId(), r.GetStatus())
			}
		}
	}
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			var c conformanceCase
			readYAML(t, path, &c)
			got, err := runCase(t, conn, c)
			if c.WantCode != "" {
				if status.Code(err).String() != c.WantCode {
					t.Fatalf("%v, want %s", err, c.WantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := proto.Clone(got)
			proto.Reset(want)
			fromJSON(t, "want", c.Want, want)
			if diff := cmp.Diff(want, got, protocmp.Transform(),
				protocmp.IgnoreFields(&measurev1.DataPoint{}, "timestamp", "version", "sid"),
				protocmp.IgnoreFields(&measurev1.TopNList_Item{}, "version", "timestamp"),
				protocmp.IgnoreFields(&streamv1.Element{}, "timestamp"),
			); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// runCase sends the case's request, with the time range of the data
// when it names none.
func runCase(t *testing.T, conn *grpc.ClientConn, c conformanceCase) (proto.Message, error) {
	t.Helper()
	tr := &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))}
	switch {
	case c.Measure != nil:
		req := fromJSON(t, "measure query", c.Measure, &measurev1.QueryRequest{})
		if req.TimeRange == nil {
			req.TimeRange = tr
		}
		return measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), req)
	case c.Stream != nil:
		req := fromJSON(t, "stream query", c.Stream, &streamv1.QueryRequest{})
		if req.TimeRange == nil {
			req.TimeRange = tr
		}
		return streamv1.NewStreamServiceClient(conn).Query(ctxT(t), req)
	case c.TopN != nil:
		req := fromJSON(t, "top-N query", c.TopN, &measurev1.TopNRequest{})
		if req.TimeRange == nil {
			req.TimeRange = tr
		}
		return measurev1.NewMeasureServiceClient(conn).TopN(ctxT(t), req)
	}
	t.Fatal("the case names no request (measure, stream or topN)")
	return nil, status.Error(codes.Internal, "unreachable")
}

// writeConformanceStream writes a data set's elements, at(i, n) each.
func writeConformanceStream(t *testing.T, conn *grpc.ClientConn, md *commonv1.Metadata, elements []json.RawMessage,
	at func(i, n int) *timestamppb.Timestamp,
) {
	t.Helper()
	reqs := make([]*streamv1.WriteRequest, len(elements))
	for i, raw := range elements {
		e := fromJSON(t, "element", raw, &streamv1.ElementValue{})
		e.Timestamp = at(i, len(elements))
		reqs[i] = &streamv1.WriteRequest{Element: e, MessageId: uint64(i + 1)}
	}
	reqs[0].Metadata = md
	resps, err := sendStream(t, conn, reqs)
	if err != nil || len(resps) != len(reqs) {
		t.Fatalf("write %s: %d answers for %d elements (%v)", md.GetName(), len(resps), len(reqs), err)
	}
	for _, r := range resps {
		if r.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("write %s element %d: %s", md.GetName(), r.GetMessageId(), r.GetStatus())
		}
	}
}
