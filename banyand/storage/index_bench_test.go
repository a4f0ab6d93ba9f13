package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// BenchmarkIndexedCondition compares a condition on an indexed tag with
// the same condition read by a scan, over 1M stream elements (one day
// segment, flushed to Pebble): 1,000 codes, so EQ on code selects 1,000
// elements, and the query asks for all of them; "order" asks for the 20
// elements of the highest codes (a sorted index).
func BenchmarkIndexedCondition(b *testing.B) {
	const total, batch, codes = 1_000_000, 1000, 1000
	ctx := context.Background()
	s := openStore(b, b.TempDir(), nil)
	es := make([]elem, batch)
	for j := range total / batch {
		for i := range es {
			n := j*batch + i
			es[i] = elem{service: fmt.Sprintf("svc-%d", n%16), instance: fmt.Sprintf("inst-%d", n%64),
				id: fmt.Sprintf("e%d", n), ts: base.Add(time.Duration(n) * time.Millisecond), code: int64(n % codes)}
		}
		if errs := s.WriteStream(ctx, indexedStreamMsgs(b, es, testIndexSpec)); errs != nil {
			b.Fatal(errs)
		}
	}
	db, err := s.DB()
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	tr := timeRange(base, base.Add(time.Duration(total)*time.Millisecond))
	for _, c := range []struct {
		name string
		crit *modelv1.Criteria
		want int
	}{
		{"eq", eq("code", intv(417)), total / codes},
		{"in", cond("code", modelv1.Condition_BINARY_OP_IN, ints(3, 5)), 2 * total / codes},
		{"having", cond("labels", modelv1.Condition_BINARY_OP_HAVING, strs("e123456")), 1},
		{"range", cond("code", modelv1.Condition_BINARY_OP_GE, intv(995)), 5 * total / codes},
		{"order", nil, 20},
	} {
		q := streamQuery(&streamv1.QueryRequest{TimeRange: tr, Criteria: c.crit, Limit: uint32(c.want), Projection: allStreamTags()})
		if c.name == "order" {
			q.Request.OrderBy = &modelv1.QueryOrder{IndexRuleName: "code-rule", Sort: modelv1.Sort_SORT_DESC}
			q.OrderTag = "code"
		}
		for _, scan := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/scan=%v", c.name, scan), func(b *testing.B) {
				for range b.N {
					res, err := s.doQueryStream(ctx, q, queryOpts{forceScan: scan})
					if err != nil {
						b.Fatal(err)
					}
					if len(res.GetElements()) != c.want {
						b.Fatalf("%d elements, want %d", len(res.GetElements()), c.want)
					}
				}
			})
		}
	}
}
