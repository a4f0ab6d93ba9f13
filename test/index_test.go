package test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/internal/poll"
)

// Index rules bound before the writes become the data nodes' indexes:
// conditions on the rules' tags and an order by one read them (the
// standalone's metrics count the segments read through an index), and
// every answer is the one the criteria give.
func TestIndexRulesAnswerQueries(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		var sa roles.Standalone
		sa.SetDefaults("127.0.0.1:0", t.TempDir())
		sa.HTTPAddr = "127.0.0.1:0"
		runClientRole(t, "standalone", &sa)
		conn := dial(t, sa.ClientAddr())
		checkIndexedQueries(t, conn)
		m := scrape(t, sa.HTTPBoundAddr())
		m.want(t, "segments read through an index", positive, "banyand_storage_engine_query_indexed_segments_total")
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		checkIndexedQueries(t, c.liaisons[0])
	})
}

func checkIndexedQueries(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	createStreamSchema(t, conn, 4)
	ctx := ctxT(t)
	rules := databasev1.NewIndexRuleRegistryServiceClient(conn)
	for name, tag := range map[string]string{"svc": "service", "codes": "codes", "inst": "instance"} {
		if _, err := rules.Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: &databasev1.IndexRule{
			Metadata: &commonv1.Metadata{Group: streamGroup, Name: name}, Tags: []string{tag}, Type: databasev1.IndexRule_TYPE_INVERTED,
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: &databasev1.IndexRuleBinding{
		Metadata: &commonv1.Metadata{Group: streamGroup, Name: "bind"}, Rules: []string{"svc", "codes", "inst"},
		Subject: &databasev1.Subject{Catalog: commonv1.Catalog_CATALOG_STREAM, Name: streamName},
		BeginAt: timestamppb.New(baseTime.Add(-time.Hour)), ExpireAt: timestamppb.New(baseTime.Add(24 * 365 * time.Hour)),
	}}); err != nil {
		t.Fatal(err)
	}
	query := func(crit *modelv1.Criteria, order *modelv1.QueryOrder, limit uint32) ([]string, error) {
		resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
			Groups: []string{streamGroup}, Name: streamName, Criteria: crit, OrderBy: order, Limit: limit,
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
		})
		var ids []string
		for _, el := range resp.GetElements() {
			ids = append(ids, el.GetElementId())
		}
		return ids, err
	}
	byInstance := &modelv1.QueryOrder{IndexRuleName: "inst", Sort: modelv1.Sort_SORT_DESC}
	// The writes carry the rules once the liaison sees the binding, which
	// an order by a bound rule shows.
	poll.Within(t, 10*time.Second, "the binding seen", func() bool {
		_, err := query(nil, byInstance, 1)
		return err == nil
	})
	const n, entities = 300, 12
	checkStreamRoundTrip(t, conn, n, entities)
	pick := func(f func(i int) bool) []string {
		var ids []string
		for i := range n {
			if f(i) {
				ids = append(ids, answeredID(fmt.Sprintf("el-%05d", i)))
			}
		}
		return ids
	}
	cond := func(name string, op modelv1.Condition_BinaryOp, v *modelv1.TagValue) *modelv1.Criteria {
		return &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: name, Op: op, Value: v}}}
	}
	ints := func(v ...int64) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: v}}}
	}
	for _, tc := range []struct {
		name string
		crit *modelv1.Criteria
		want []string
	}{
		{"eq", cond("service", modelv1.Condition_BINARY_OP_EQ, str("svc-5")), pick(func(i int) bool { return i%entities == 5 })},
		{"having", cond("codes", modelv1.Condition_BINARY_OP_HAVING, ints(7, -1)), pick(func(i int) bool { return i == 7 })},
		{"range", cond("instance", modelv1.Condition_BINARY_OP_GE, num(2)), pick(func(i int) bool { return i%3 == 2 })},
	} {
		got, err := query(tc.crit, &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_ASC}, n)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	// instance desc (2, 1, 0), ties by time desc.
	got, err := query(nil, byInstance, 5)
	if want := answeredIDs("el-00299", "el-00296", "el-00293", "el-00290", "el-00287"); err != nil || !slices.Equal(got, want) {
		t.Errorf("order by instance: %v %v, want %v", got, err, want)
	}
}
