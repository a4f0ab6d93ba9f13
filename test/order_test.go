package test

import (
	"fmt"
	"slices"
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

// A stream query ordered by an index rule comes back ordered by the rule's
// tag, merged across data nodes, with offset and limit over the whole.
// started = baseTime - i s, null for every fifth element.
func TestStreamOrderByIndexedTag(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		checkOrderByTag(t, conn)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		checkOrderByTag(t, c.liaisons[0])
	})
}

func checkOrderByTag(t *testing.T, conn *grpc.ClientConn) {
	createStreamSchema(t, conn, 4)
	const n = 60
	checkStreamRoundTrip(t, conn, n, 12) // spread over the shards, so over both nodes
	ctx := ctxT(t)
	if _, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: &databasev1.IndexRule{
		Metadata: &commonv1.Metadata{Group: streamGroup, Name: "started"}, Tags: []string{"started"}, Type: databasev1.IndexRule_TYPE_INVERTED,
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: &databasev1.IndexRule{
		Metadata: &commonv1.Metadata{Group: streamGroup, Name: "unbound"}, Tags: []string{"instance"}, Type: databasev1.IndexRule_TYPE_INVERTED,
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: &databasev1.IndexRuleBinding{
		Metadata: &commonv1.Metadata{Group: streamGroup, Name: "bind"}, Rules: []string{"started"},
		Subject: &databasev1.Subject{Catalog: commonv1.Catalog_CATALOG_STREAM, Name: streamName},
		BeginAt: timestamppb.New(baseTime.Add(-time.Hour)), ExpireAt: timestamppb.New(baseTime.Add(24 * 365 * time.Hour)),
	}}); err != nil {
		t.Fatal(err)
	}
	// Ascending: nulls lowest (in time order), then by started, which
	// falls as i grows.
	var asc []string
	for i := 0; i < n; i += 5 {
		asc = append(asc, answeredID(fmt.Sprintf("el-%05d", i)))
	}
	for i := n - 1; i >= 0; i-- {
		if i%5 != 0 {
			asc = append(asc, answeredID(fmt.Sprintf("el-%05d", i)))
		}
	}
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	query := func(rule string, sort modelv1.Sort) ([]string, error) {
		resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
			Groups: []string{streamGroup}, Name: streamName, Offset: 2, Limit: 10,
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
			OrderBy:   &modelv1.QueryOrder{IndexRuleName: rule, Sort: sort},
		})
		var ids []string
		for _, el := range resp.GetElements() {
			ids = append(ids, el.GetElementId())
		}
		return ids, err
	}
	for sort, want := range map[modelv1.Sort][]string{modelv1.Sort_SORT_ASC: asc[2:12], modelv1.Sort_SORT_DESC: desc[2:12]} {
		got, err := query("started", sort)
		if err != nil {
			t.Fatalf("%v: %v", sort, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ordered by started %v: %v, want %v", sort, got, want)
		}
	}
	for _, rule := range []string{"nope", "unbound"} {
		if _, err := query(rule, modelv1.Sort_SORT_ASC); status.Code(err) != codes.InvalidArgument {
			t.Errorf("order by rule %q: %v, want InvalidArgument", rule, err)
		}
	}
}
