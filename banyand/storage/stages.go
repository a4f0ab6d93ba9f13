package storage

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
)

// scanStats counts what one query's scan did on this node. Counting costs
// a few increments a record, so scans always count; only a request with
// trace = true sends the counts back (stageTrace).
type scanStats struct {
	segments int // segments of the time range read
	indexed  int // of those, read through their tag indexes (docs/design/indexes.md)
	scanned  int // records of the time range visited
	matched  int // records that met the criteria (those the cut keeps out are not evaluated)
}

// stageTrace is this node's execution trace of a query asked with
// trace = true, else nil: one span for the stage (its name) from start to
// now, tagged with the scan's counts and the results the node sends.
func stageTrace(on bool, stage string, start time.Time, st scanStats, returned int) *commonv1.Trace {
	if !on {
		return nil
	}
	end := time.Now()
	tag := func(k string, v int) *commonv1.Tag { return &commonv1.Tag{Key: k, Value: strconv.Itoa(v)} }
	return &commonv1.Trace{Spans: []*commonv1.Span{{
		Message:   stage,
		StartTime: timestamppb.New(start),
		EndTime:   timestamppb.New(end),
		Duration:  end.Sub(start).Nanoseconds(),
		Tags: []*commonv1.Tag{
			tag("segments", st.segments), tag("indexed_segments", st.indexed), tag("scanned", st.scanned), tag("matched", st.matched), tag("returned", returned),
		},
	}}}
}
