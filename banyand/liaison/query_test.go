package liaison

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

func TestCheckQueryTimeRange(t *testing.T) {
	ts := func(sec int64, nanos int32) *timestamppb.Timestamp {
		return &timestamppb.Timestamp{Seconds: sec, Nanos: nanos}
	}
	cases := []struct {
		name       string
		begin, end *timestamppb.Timestamp
		want       codes.Code
	}{
		{"ordinary", ts(1_700_000_000, 0), ts(1_700_000_060, 0), codes.OK},
		{"before 1970", ts(-1_000, 0), ts(0, 0), codes.OK},
		{"sub-millisecond bounds", ts(1, 1), ts(1, 2), codes.InvalidArgument},
		{"begin equals end", ts(1_700_000_000, 0), ts(1_700_000_000, 0), codes.OK},
		{"zero to the maximum", ts(0, 0), timestamppb.New(maxTime), codes.OK},
		{"negative millisecond nanos", ts(-1, -5_000_000), ts(2, 0), codes.OK},
		{"end beyond 2262", ts(0, 0), ts(1<<35, 0), codes.InvalidArgument},
		{"begin before 1677", ts(-1<<35, 0), ts(0, 0), codes.InvalidArgument},
		{"end beyond year 9999", ts(0, 0), ts(1<<62, 0), codes.InvalidArgument},
		{"negative sub-millisecond nanos", ts(1, -1), ts(2, 0), codes.InvalidArgument},
		{"nanos of a whole second", ts(1, 0), ts(2, 1_000_000_000), codes.OK},
		{"end before begin", ts(2, 0), ts(1, 0), codes.OK}, // nothing to answer, as in BanyanDB
	}
	for _, c := range cases {
		err := checkQuery([]string{"g"}, "n", &modelv1.TimeRange{Begin: c.begin, End: c.end}, nil, 0, 0)
		if got := status.Code(err); got != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
}
