package bench

import (
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// TestRunOAPShape writes OAP's minute metric and log record into OAP's
// groups, one writer stream a run and as OAP's flushes (the spec, values
// in its alphabetical order); every write is acked and read back, the
// schema, rules and binding are OAP's, and a second run into the now
// existing schema stays exact.
func TestRunOAPShape(t *testing.T) {
	addr, _ := startTestStandalone(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	for _, tc := range []struct {
		kind, group, name string
		catalog           commonv1.Catalog
		rules             []string
	}{
		{KindMeasure, "sw_metricsMinute", "service_resp_time_minute", commonv1.Catalog_CATALOG_MEASURE,
			[]string{"attr0", "attr1", "attr2", "attr3", "attr4", "attr5"}},
		{KindStream, "sw_recordsLog", "log", commonv1.Catalog_CATALOG_STREAM,
			[]string{"unique_id", "endpoint_id", "trace_id", "trace_segment_id", "content", "tags"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			for _, flush := range []string{"0", "9"} {
				cfg := parseConfig(t, "--target", addr, "--kind", tc.kind, "--shape", "oap", "--count", "1500",
					"--entities", "23", "--streams", "3", "--flush-size", flush, "--payload-bytes", "300")
				rep, err := Run(runCtx(t), cfg, nil, testWriter{t})
				checkClean(t, rep, err, 1500)
				if rep.Group != tc.group || rep.Name != tc.name {
					t.Fatalf("wrote %s/%s, want OAP's %s/%s", rep.Group, rep.Name, tc.group, tc.name)
				}
			}
			checkOAPSchema(t, conn, tc.kind, tc.group, tc.name, tc.catalog, tc.rules)
		})
	}
}

// checkOAPSchema checks the group, the subject and its rules as the
// registry keeps them.
func checkOAPSchema(t *testing.T, conn *grpc.ClientConn, kind, group, name string, catalog commonv1.Catalog, rules []string) {
	t.Helper()
	ctx := runCtx(t)
	md := &commonv1.Metadata{Group: group, Name: name}
	g, err := databasev1.NewGroupRegistryServiceClient(conn).Get(ctx, &databasev1.GroupRegistryServiceGetRequest{Group: group})
	if err != nil {
		t.Fatal(err)
	}
	if g.GetGroup().GetCatalog() != catalog || g.GetGroup().GetResourceOpts().GetTtl().GetNum() != oapLayoutOf(kind).ttlDays {
		t.Fatalf("group %s = %v", group, g.GetGroup())
	}
	var fams []*databasev1.TagFamilySpec
	var entity []string
	if kind == KindMeasure {
		resp, err := databasev1.NewMeasureRegistryServiceClient(conn).Get(ctx, &databasev1.MeasureRegistryServiceGetRequest{Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		ms := resp.GetMeasure()
		fams, entity = ms.GetTagFamilies(), ms.GetEntity().GetTagNames()
		var fields []string
		for _, f := range ms.GetFields() {
			fields = append(fields, f.GetName())
		}
		if !slices.Equal(fields, []string{"summation", "count", "value"}) || ms.GetInterval() != "1m" {
			t.Fatalf("measure fields %v interval %q, want summation, count, value at 1m", fields, ms.GetInterval())
		}
	} else {
		resp, err := databasev1.NewStreamRegistryServiceClient(conn).Get(ctx, &databasev1.StreamRegistryServiceGetRequest{Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		fams, entity = resp.GetStream().GetTagFamilies(), resp.GetStream().GetEntity().GetTagNames()
	}
	if len(fams) != 2 || fams[0].GetName() != famStorageOnly || fams[1].GetName() != famSearchable {
		t.Fatalf("tag families %v, want storage-only, searchable", fams)
	}
	var searchable []string
	for _, tag := range fams[1].GetTags() {
		searchable = append(searchable, tag.GetName())
	}
	if !slices.Equal(searchable, rules) {
		t.Fatalf("searchable tags %v, want the indexed ones %v", searchable, rules)
	}
	if want := map[string][]string{KindMeasure: {"entity_id"}, KindStream: {"service_id", "service_instance_id"}}[kind]; !slices.Equal(entity, want) {
		t.Fatalf("entity %v, want %v", entity, want)
	}
	b, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Get(ctx, &databasev1.IndexRuleBindingRegistryServiceGetRequest{Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.GetIndexRuleBinding().GetRules(), rules) || b.GetIndexRuleBinding().GetSubject().GetCatalog() != catalog {
		t.Fatalf("binding %v, want rules %v", b.GetIndexRuleBinding(), rules)
	}
	for _, r := range rules {
		got, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Get(ctx, &databasev1.IndexRuleRegistryServiceGetRequest{
			Metadata: &commonv1.Metadata{Group: group, Name: r},
		})
		if err != nil {
			t.Fatalf("index rule %s: %v", r, err)
		}
		want := databasev1.IndexRule_TYPE_INVERTED
		if r == "trace_id" { // @BanyanDB.IndexRule(indexType = SKIPPING)
			want = databasev1.IndexRule_TYPE_SKIPPING
		}
		if rule := got.GetIndexRule(); rule.GetType() != want || !rule.GetNoSort() || !slices.Equal(rule.GetTags(), []string{r}) {
			t.Fatalf("index rule %s = %v, want %s over its tag, no_sort", r, rule, want)
		}
	}
}

// The oap requests are byte for byte what proto.Marshal writes for the
// same messages built as structs from the layout's values, in the
// schema's order and in the spec's.
func TestOAPRequestsMatchProtoMarshal(t *testing.T) {
	for _, kind := range []string{KindStream, KindMeasure} {
		for _, entities := range []int{23, maxCachedEntities + 1} {
			for _, flushSize := range []int64{0, 10} {
				m := shapedMessages(t, kind, ShapeOAP, entities, flushSize)
				for _, seq := range []int64{0, 1, 22, 23, 999, 123_456_789} {
					for _, id := range []uint64{1, 2, 1 << 40} {
						want, err := proto.Marshal(refOAPRequest(t, m, id, seq))
						if err != nil {
							t.Fatal(err)
						}
						got := m.oapStreamRequest(id, seq, id == 1)
						if kind == KindMeasure {
							got = m.oapMeasureRequest(id, seq, id == 1)
						}
						if string(got) != string(want) {
							t.Fatalf("%s entities %d flush size %d seq %d id %d: encoded %x, proto.Marshal %x", kind, entities, flushSize, seq, id, got, want)
						}
					}
				}
			}
		}
	}
}

// refOAPValues are message seq's values by column name, built as structs.
func refOAPValues(m *messages, seq int64) (tags map[string]*modelv1.TagValue, fields map[string]*modelv1.FieldValue) {
	str := func(s string) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: s}}}
	}
	num := func(v int64) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: v}}}
	}
	fnum := func(v int64) *modelv1.FieldValue {
		return &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: v}}}
	}
	e := m.entity(seq)
	if m.measure {
		tags = map[string]*modelv1.TagValue{"entity_id": str(m.oapServiceID(e)), "attr0": str("GENERAL")}
		for _, a := range []string{"attr1", "attr2", "attr3", "attr4", "attr5"} {
			tags[a] = &modelv1.TagValue{Value: &modelv1.TagValue_Null{}}
		}
		s, c, v := oapRespTime(seq)
		return tags, map[string]*modelv1.FieldValue{"summation": fnum(s), "count": fnum(c), "value": fnum(v)}
	}
	return map[string]*modelv1.TagValue{
		"unique_id":           str(m.elementID(seq)),
		"service_id":          str(m.oapServiceID(e / instancesPerService)),
		"service_instance_id": str(m.oapInstanceID(e)),
		"endpoint_id":         str(m.oapEndpointID(e)),
		"trace_id":            str(m.oapTraceID(seq, oapLogsPerTrace)),
		"trace_segment_id":    str(m.oapTraceID(seq, oapLogsPerSegment)),
		"span_id":             num(seq % oapLogsPerSegment),
		"content_type":        num(1),
		"content":             str(m.oapLogLine(seq)),
		"timestamp":           num(m.millis(seq)),
		"tags_raw_data":       {Value: &modelv1.TagValue_BinaryData{BinaryData: oapLogTags}},
		"tags":                {Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"level=INFO"}}}},
	}, nil
}

func refOAPRequest(t *testing.T, m *messages, id uint64, seq int64) proto.Message {
	t.Helper()
	tags, fieldValues := refOAPValues(m, seq)
	fams := refSchemaFamilies(m)
	if m.spec {
		fams = sortedFamilies(fams)
	}
	var written []*modelv1.TagFamilyForWrite
	var specNames []string
	var specTags [][]string
	for _, f := range fams {
		names := sortedTags(f)
		if !m.spec {
			names = nil
			for _, tag := range f.GetTags() {
				names = append(names, tag.GetName())
			}
		}
		w := &modelv1.TagFamilyForWrite{}
		for _, n := range names {
			if tags[n] == nil {
				t.Fatalf("no value for tag %s", n)
			}
			w.Tags = append(w.Tags, tags[n])
		}
		written = append(written, w)
		specNames, specTags = append(specNames, f.GetName()), append(specTags, names)
	}
	if len(tags) != len(m.oap.layout.cols)-len(fieldValues) {
		t.Fatalf("the schema has other tags than the reference values")
	}
	var md *commonv1.Metadata
	if id == 1 {
		md = m.md
	}
	withSpec := id == 1 && m.spec
	if m.measure {
		fieldNames := []string{"summation", "count", "value"}
		if m.spec {
			fieldNames = []string{"count", "summation", "value"}
		}
		dp := &measurev1.DataPointValue{Timestamp: refTimestamp(m, seq), TagFamilies: written}
		for _, n := range fieldNames {
			dp.Fields = append(dp.Fields, fieldValues[n])
		}
		req := &measurev1.WriteRequest{Metadata: md, MessageId: id, DataPoint: dp}
		if withSpec {
			req.DataPointSpec = &measurev1.DataPointSpec{FieldNames: fieldNames}
			for i, n := range specNames {
				req.DataPointSpec.TagFamilySpec = append(req.DataPointSpec.TagFamilySpec, &measurev1.TagFamilySpec{Name: n, TagNames: specTags[i]})
			}
		}
		return req
	}
	req := &streamv1.WriteRequest{Metadata: md, MessageId: id, Element: &streamv1.ElementValue{
		ElementId: m.elementID(seq), Timestamp: refTimestamp(m, seq), TagFamilies: written,
	}}
	if withSpec {
		for i, n := range specNames {
			req.TagFamilySpec = append(req.TagFamilySpec, &streamv1.TagFamilySpec{Name: n, TagNames: specTags[i]})
		}
	}
	return req
}

// An oap metric's points sit on whole minutes, one a minute an entity;
// a log's element ids are as long as OAP's and parse back.
func TestOAPTimesAndIDs(t *testing.T) {
	m := shapedMessages(t, KindMeasure, ShapeOAP, 23, 0)
	for _, seq := range []int64{0, 22, 23, 46, 1_000_000} {
		if got, want := m.millis(seq)%60_000, int64(0); got != want {
			t.Fatalf("seq %d at %d ms: not on a minute", seq, m.millis(seq))
		}
	}
	if m.millis(23)-m.millis(22) != 60_000 || m.millis(22) != m.millis(0) {
		t.Fatalf("entity 0's points at %d and %d ms, want a minute apart", m.millis(0), m.millis(23))
	}
	s := shapedMessages(t, KindStream, ShapeOAP, 23, 0)
	for _, seq := range []int64{0, 7, 123_456_789} {
		id := s.elementID(seq)
		if len(id) != oapElementIDLen || s.seqOfElement(id) != seq {
			t.Fatalf("seq %d: element id %q (%d bytes) parses to %d", seq, id, len(id), s.seqOfElement(id))
		}
	}
}
