package storage

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/banyand/topn"
	"github.com/banyand-io/banyand/pkg/wire"
)

// queryRankingPartials answers a partial query of top-N rankings (a
// topn.RecordName; see PreAggregateTopN): the rankings of the range that
// pass the criteria, of the shards the plan has this node answer for,
// folded into one partial a series (its values over the windows it
// ranked in). A partial's first point holds the series' entity tags
// (family topn.TagFamily), its earliest point's timestamp and its series
// id, so that series come in the order of their first point, as when the
// points are folded.
func (s *Store) queryRankingPartials(ctx context.Context, q *clusterv1.MeasureQuery, pp *clusterv1.MeasurePartialPlan) (*clusterv1.MeasurePartials, error) {
	p, _, crit, _, err := measurePlan(q, 0, 0)
	if err != nil {
		return nil, err
	}
	answers, held := make([]bool, pp.GetShardNum()), make([]bool, pp.GetShardNum())
	for _, sh := range pp.GetShards() {
		if sh < pp.GetShardNum() {
			answers[sh] = true
		}
	}
	type series struct {
		part  *clusterv1.MeasurePartial
		stats aggregate.Stats
	}
	var folded []*series
	index := map[string]int{}
	res := &clusterv1.MeasurePartials{}
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	var wp wire.Point
	var dp measurev1.DataPointValue
	for _, group := range p.groups {
		for _, seg := range db.SegmentsIn(p.kind, group, p.begin, p.end) {
			err := db.ScanSegment(ctx, seg, tsdb.Scan{Name: p.name, Begin: p.begin, End: p.end}, func(it *tsdb.Item) error {
				p.stats.scanned++
				if err := wire.ParseDataPoint(it.Payload, &wp); err != nil {
					return fmt.Errorf("storage: stored ranking does not decode: %w", err)
				}
				shard, ok := wp.Tag(0, 2)
				if !ok || len(wp.Fields) == 0 {
					return fmt.Errorf("storage: stored ranking has no shard or no ranking")
				}
				sh := uint32(shard.Int)
				if sh >= pp.GetShardNum() {
					return nil
				}
				held[sh] = true
				if !pp.GetAllShards() && !answers[sh] {
					return nil
				}
				if crit.match != nil {
					proto.Reset(&dp)
					if err := proto.Unmarshal(it.Payload, &dp); err != nil {
						return fmt.Errorf("storage: stored ranking does not decode: %w", err)
					}
					if !crit.match(dp.GetTagFamilies()) {
						return nil
					}
				}
				p.stats.matched++
				return topn.Each(wp.Fields[0].Bytes, func(names []string, e *topn.Entry) error {
					res.Points++
					i, ok := index[string(e.Entity)]
					if !ok {
						tags, err := topn.EntityTags(names, e.Entity)
						if err != nil {
							return err
						}
						i = len(folded)
						index[string(e.Entity)] = i
						folded = append(folded, &series{part: &clusterv1.MeasurePartial{Key: []byte(string(e.Entity)), First: &measurev1.DataPoint{
							Timestamp: timestamppb.New(time.Unix(0, e.Timestamp)), Sid: tsdb.SeriesHash([]byte(e.Series)),
							TagFamilies: []*modelv1.TagFamily{{Name: topn.TagFamily, Tags: tags}},
						}}})
					}
					f := folded[i]
					if first := f.part.GetFirst(); e.Timestamp < first.GetTimestamp().AsTime().UnixNano() {
						first.Timestamp = timestamppb.New(time.Unix(0, e.Timestamp))
					}
					if e.Value.Float {
						f.stats.AddFloat(e.Value.F)
					} else {
						f.stats.AddInt(e.Value.Int)
					}
					return nil
				})
			})
			if err != nil {
				return nil, mapClosed(err)
			}
			p.stats.segments++
		}
	}
	s.countReads(p.stats)
	for sh, ok := range held {
		if ok {
			res.ShardsHeld = append(res.ShardsHeld, uint32(sh))
		}
	}
	for _, f := range folded {
		f.stats.Fill(f.part)
		res.Groups = append(res.Groups, f.part)
	}
	return res, nil
}
