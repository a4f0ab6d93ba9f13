package liaison

import (
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
)

// queryTrace records how a query ran, for a request with trace = true, as
// BanyanDB's common.v1.Trace: a span for the query and, under it, one per
// group asked (how many data nodes answered, how many results they sent),
// and one for merging the answers. A nil *queryTrace records nothing, so
// the query path calls it unconditionally.
type queryTrace struct {
	trace *commonv1.Trace
	root  *commonv1.Span
}

// newQueryTrace starts the trace of a query if on.
func newQueryTrace(on bool, format string, args ...any) *queryTrace {
	if !on {
		return nil
	}
	root := &commonv1.Span{Message: fmt.Sprintf(format, args...), StartTime: timestamppb.Now()}
	return &queryTrace{trace: &commonv1.Trace{TraceId: strconv.FormatInt(time.Now().UnixNano(), 36), Spans: []*commonv1.Span{root}}, root: root}
}

// start opens a span under the query's.
func (q *queryTrace) start(format string, args ...any) *commonv1.Span {
	if q == nil {
		return nil
	}
	return q.startUnder(q.root, format, args...)
}

// startUnder opens a span under parent.
func (q *queryTrace) startUnder(parent *commonv1.Span, format string, args ...any) *commonv1.Span {
	if q == nil || parent == nil {
		return nil
	}
	s := &commonv1.Span{Message: fmt.Sprintf(format, args...), StartTime: timestamppb.Now()}
	parent.Children = append(parent.Children, s)
	return s
}

// end closes s with tags (key, value pairs).
func (q *queryTrace) end(s *commonv1.Span, tags ...string) {
	if q == nil || s == nil {
		return
	}
	for i := 0; i+1 < len(tags); i += 2 {
		s.Tags = append(s.Tags, &commonv1.Tag{Key: tags[i], Value: tags[i+1]})
	}
	stop(s)
}

// finish closes the query's span and returns the trace, or nil.
func (q *queryTrace) finish() *commonv1.Trace {
	if q == nil {
		return nil
	}
	stop(q.root)
	return q.trace
}

func stop(s *commonv1.Span) {
	s.EndTime = timestamppb.Now()
	s.Duration = s.GetEndTime().AsTime().Sub(s.GetStartTime().AsTime()).Nanoseconds()
}

// attachNode adds under it a span for one data node's answer about group,
// from when the liaison asked (start) to now, holding the stages the node
// traced.
func attachNode(under *commonv1.Span, group, node string, start time.Time, stages *commonv1.Trace) {
	s := &commonv1.Span{
		Message: fmt.Sprintf("data node %s: group %s", node, group), StartTime: timestamppb.New(start), Children: stages.GetSpans(),
	}
	stop(s)
	under.Children = append(under.Children, s)
}
