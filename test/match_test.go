package test

import (
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
)

// MATCH analyzes with the analyzer of the index rule bound to the tag (as
// SkyWalking OAP's endpoint name search does with the url analyzer), or
// the one the condition names; a MATCH no rule analyzes is
// InvalidArgument. service = "svc-N", N = i % 12.
func TestStreamMatchWithAnalyzer(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		checkMatch(t, conn)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		checkMatch(t, c.liaisons[0])
	})
}

func checkMatch(t *testing.T, conn *grpc.ClientConn) {
	createStreamSchema(t, conn, 4)
	const n = 48
	checkStreamRoundTrip(t, conn, n, 12)
	ctx := ctxT(t)
	if _, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: &databasev1.IndexRule{
		Metadata: &commonv1.Metadata{Group: streamGroup, Name: "service-url"}, Tags: []string{"service"}, Type: databasev1.IndexRule_TYPE_INVERTED, Analyzer: "url",
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: &databasev1.IndexRuleBinding{
		Metadata: &commonv1.Metadata{Group: streamGroup, Name: "bind-match"}, Rules: []string{"service-url"},
		Subject: &databasev1.Subject{Catalog: commonv1.Catalog_CATALOG_STREAM, Name: streamName},
		BeginAt: timestamppb.New(baseTime.Add(-time.Hour)), ExpireAt: timestamppb.New(baseTime.Add(24 * 365 * time.Hour)),
	}}); err != nil {
		t.Fatal(err)
	}
	query := func(tag string, v *modelv1.TagValue, opt *modelv1.Condition_MatchOption) (int, error) {
		resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
			Groups: []string{streamGroup}, Name: streamName, Limit: 1000,
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
				Name: tag, Op: modelv1.Condition_BINARY_OP_MATCH, Value: v, MatchOption: opt,
			}}},
		})
		return len(resp.GetElements()), err
	}
	and := &modelv1.Condition_MatchOption{Operator: modelv1.Condition_MatchOption_OPERATOR_AND}
	for _, c := range []struct {
		name string
		v    *modelv1.TagValue
		opt  *modelv1.Condition_MatchOption
		want int
	}{
		{"a token of every value", str("svc"), nil, n},
		{"or: any token", str("svc-3"), nil, n},
		{"and: every token", str("svc-3"), and, n / 12},
		{"url keeps case", str("SVC"), nil, 0},
		{"the condition's analyzer first", str("SVC 3"), &modelv1.Condition_MatchOption{Analyzer: "standard", Operator: modelv1.Condition_MatchOption_OPERATOR_AND}, n / 12},
		{"each array item", &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"svc", "11"}}}}, nil, n / 12},
	} {
		got, err := query("service", c.v, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: %d elements, want %d", c.name, got, c.want)
		}
	}
	for name, q := range map[string]func() error{
		"a tag no rule analyzes": func() error { _, err := query("labels", str("a"), nil); return err },
		"an unknown analyzer": func() error {
			_, err := query("service", str("svc"), &modelv1.Condition_MatchOption{Analyzer: "bogus"})
			return err
		},
	} {
		if err := q(); status.Code(err) != codes.InvalidArgument {
			t.Errorf("MATCH on %s: %v, want InvalidArgument", name, err)
		}
	}
}
