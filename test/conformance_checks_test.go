package test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
)

// spanShape is what a conformance case expects of an execution trace
// span: its message matches message (a regular expression), it carries
// every tag key in tags, and each child shape is matched by at least one
// of its children. Durations and tag values vary run to run and node
// counts between standalone and a cluster, so they are not compared.
type spanShape struct {
	Message  string       `json:"message"`
	Tags     []string     `json:"tags"`
	Children []*spanShape `json:"children"`
}

// banyandbID is an element id in the form BanyanDB answers it: 16
// lower-case hex digits (see pkg/elementid).
var banyandbID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// checkWantIDs fails a stream case whose want holds an element id not in
// BanyanDB's form: the answer never holds the id as written.
func checkWantIDs(t *testing.T, want proto.Message) {
	t.Helper()
	r, ok := want.(*streamv1.QueryResponse)
	if !ok {
		return
	}
	for _, el := range r.GetElements() {
		if !banyandbID.MatchString(el.GetElementId()) {
			t.Fatalf("want element id %q is not in BanyanDB's form (16 hex digits of xxhash64 of group|name|id)", el.GetElementId())
		}
	}
}

// executionTrace is the common.v1.Trace of a query answer, or nil.
func executionTrace(resp proto.Message) *commonv1.Trace {
	switch r := resp.(type) {
	case interface{ GetTrace() *commonv1.Trace }:
		return r.GetTrace()
	case *tracev1.QueryResponse:
		return r.GetTraceQueryResult()
	}
	return nil
}

// checkTraceShape fails unless tr has one root span that matches want and
// every span of it is timed (end not before start, duration not negative).
func checkTraceShape(t *testing.T, tr *commonv1.Trace, want *spanShape) {
	t.Helper()
	if tr == nil || len(tr.GetSpans()) != 1 {
		t.Fatalf("execution trace %v: want one root span", tr)
	}
	root := tr.GetSpans()[0]
	if why := matchSpan(root, want); why != "" {
		t.Errorf("execution trace does not have the shape asked: %s\ntrace: %v", why, root)
	}
	var timed func(s *commonv1.Span)
	timed = func(s *commonv1.Span) {
		if s.GetStartTime() == nil || s.GetEndTime() == nil || s.GetEndTime().AsTime().Before(s.GetStartTime().AsTime()) || s.GetDuration() < 0 {
			t.Errorf("span %q is not timed: %v", s.GetMessage(), s)
		}
		for _, c := range s.GetChildren() {
			timed(c)
		}
	}
	timed(root)
}

// matchSpan returns why s does not match want, or "".
func matchSpan(s *commonv1.Span, want *spanShape) string {
	if ok, err := regexp.MatchString(want.Message, s.GetMessage()); err != nil || !ok {
		return fmt.Sprintf("span %q does not match %q (%v)", s.GetMessage(), want.Message, err)
	}
	for _, key := range want.Tags {
		found := false
		for _, tag := range s.GetTags() {
			found = found || tag.GetKey() == key
		}
		if !found {
			return fmt.Sprintf("span %q has no tag %q", s.GetMessage(), key)
		}
	}
	for _, wc := range want.Children {
		var whys []string
		for _, c := range s.GetChildren() {
			why := matchSpan(c, wc)
			if why == "" {
				whys = nil
				break
			}
			whys = append(whys, why)
		}
		if len(s.GetChildren()) == 0 || whys != nil {
			return fmt.Sprintf("no child of span %q matches %q: [%s]", s.GetMessage(), wc.Message, strings.Join(whys, "; "))
		}
	}
	return ""
}

// checkIdentity fails unless every data point of a measure answer has a
// series id: BanyanDB fills it in (and the version written) for every
// point read from storage.
func checkIdentity(t *testing.T, resp proto.Message) {
	t.Helper()
	r, ok := resp.(*measurev1.QueryResponse)
	if !ok || len(r.GetDataPoints()) == 0 {
		t.Fatalf("checkIdentity needs a measure answer with points, got %T", resp)
	}
	for i, dp := range r.GetDataPoints() {
		if dp.GetSid() == 0 {
			t.Errorf("data point %d has no series id: %v", i, dp)
		}
	}
}
