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
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
)

// The conformance runner: each directory under testdata/conformance holds
// a setup.yaml (schema and data) and cases/*.yaml, each a request and the
// answer BanyanDB gives it (or the gRPC code of its refusal, or the shape
// of its execution trace), written as protobuf JSON in YAML like
// BanyanDB's own test cases. Answers compare ignoring what BanyanDB's
// runner ignores: a data point's timestamp, version and series id, an
// element's timestamp, a property's revisions and update time, and the
// execution trace (its durations differ run to run; wantTrace checks its
// shape). Element ids compare in the form BanyanDB answers them (the hex
// of xxhash64 of group|name|id; a case's comment names the written id).
// Every suite runs on standalone and on a cluster.
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

// conformanceCase is one cases/*.yaml: one request, and the answer
// (want), the gRPC code of the refusal (wantCode) or the shape of the
// execution trace (wantTrace, for a request with trace = true) expected.
type conformanceCase struct {
	Measure   json.RawMessage `json:"measure"`
	Stream    json.RawMessage `json:"stream"`
	TopN      json.RawMessage `json:"topN"`
	Trace     json.RawMessage `json:"trace"`
	Property  json.RawMessage `json:"property"`
	Want      json.RawMessage `json:"want"`
	WantCode  string          `json:"wantCode"`
	WantTrace *spanShape      `json:"wantTrace"`
	// CheckIdentity compares each data point's version too and requires
	// its series id.
	CheckIdentity bool `json:"checkIdentity"`
	// NestCriteria nests the request's criteria that many levels deep
	// (AND of the levels above and the criteria again), for the refusal
	// of criteria too deep to evaluate.
	NestCriteria int `json:"nestCriteria"`
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
	loadSetup(t, conn, &setup)
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
			if c.WantTrace != nil {
				checkTraceShape(t, executionTrace(got), c.WantTrace)
				if c.Want == nil {
					return
				}
			}
			ignorePoint := []protoreflect.Name{"timestamp", "version", "sid"}
			if c.CheckIdentity {
				checkIdentity(t, got)
				ignorePoint = ignorePoint[:1:1]
				ignorePoint = append(ignorePoint, "sid")
			}
			want := proto.Clone(got)
			proto.Reset(want)
			fromJSON(t, "want", c.Want, want)
			checkWantIDs(t, want)
			if diff := cmp.Diff(want, got, protocmp.Transform(),
				protocmp.IgnoreFields(&measurev1.DataPoint{}, ignorePoint...),
				protocmp.IgnoreFields(&measurev1.TopNList_Item{}, "version", "timestamp"),
				protocmp.IgnoreFields(&streamv1.Element{}, "timestamp"),
				protocmp.IgnoreFields(&propertyv1.Property{}, "updated_at"),
				protocmp.IgnoreFields(&commonv1.Metadata{}, "create_revision", "mod_revision"),
				protocmp.IgnoreFields(&measurev1.QueryResponse{}, "trace"),
				protocmp.IgnoreFields(&streamv1.QueryResponse{}, "trace"),
				protocmp.IgnoreFields(&tracev1.QueryResponse{}, "trace_query_result"),
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
		req.Criteria = nestCriteria(req.GetCriteria(), c.NestCriteria)
		if req.TimeRange == nil {
			req.TimeRange = tr
		}
		return measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), req)
	case c.Stream != nil:
		req := fromJSON(t, "stream query", c.Stream, &streamv1.QueryRequest{})
		req.Criteria = nestCriteria(req.GetCriteria(), c.NestCriteria)
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
	case c.Trace != nil:
		req := fromJSON(t, "trace query", c.Trace, &tracev1.QueryRequest{})
		req.Criteria = nestCriteria(req.GetCriteria(), c.NestCriteria)
		if req.TimeRange == nil {
			req.TimeRange = tr
		}
		return tracev1.NewTraceServiceClient(conn).Query(ctxT(t), req)
	case c.Property != nil:
		req := fromJSON(t, "property query", c.Property, &propertyv1.QueryRequest{})
		return propertyv1.NewPropertyServiceClient(conn).Query(ctxT(t), req)
	}
	t.Fatal("the case names no request (measure, stream, topN, trace or property)")
	return nil, status.Error(codes.Internal, "unreachable")
}

// nestCriteria returns c nested depth levels deep: a chain of ANDs, each
// of the chain so far and a copy of c (a chain, not a shared subtree,
// which would be exponentially large when marshalled).
func nestCriteria(c *modelv1.Criteria, depth int) *modelv1.Criteria {
	out := c
	for range depth {
		out = &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{
			Op: modelv1.LogicalExpression_LOGICAL_OP_AND, Left: out, Right: proto.CloneOf(c),
		}}}
	}
	return out
}
