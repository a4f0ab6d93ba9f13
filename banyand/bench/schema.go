package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// The tool's schema. Writes list tag values by position, so an existing
// stream or measure is used only if its tag families and fields are
// exactly these.
// shape is --shape (shape.go).
func tagFamilies(entityFamily, shape string) []*databasev1.TagFamilySpec {
	return []*databasev1.TagFamilySpec{
		{Name: entityFamily, Tags: entityTagSpecs(shape)},
		{Name: "data", Tags: dataTagSpecs(shape)},
	}
}

func streamSchema(md *commonv1.Metadata, shape string) *databasev1.Stream {
	if shape == ShapeOAP {
		return oapLog.stream(md)
	}
	return &databasev1.Stream{
		Metadata:    proto.CloneOf(md),
		TagFamilies: tagFamilies("searchable", shape),
		Entity:      &databasev1.Entity{TagNames: []string{tagService, tagInstance}},
	}
}

func measureSchema(md *commonv1.Metadata, shape string) *databasev1.Measure {
	if shape == ShapeOAP {
		return oapServiceRespTime.measure(md)
	}
	return &databasev1.Measure{
		Metadata:    proto.CloneOf(md),
		TagFamilies: tagFamilies("default", shape),
		Fields: []*databasev1.FieldSpec{
			{Name: fieldValue, FieldType: databasev1.FieldType_FIELD_TYPE_INT},
			{Name: fieldScore, FieldType: databasev1.FieldType_FIELD_TYPE_FLOAT},
		},
		Entity: &databasev1.Entity{TagNames: []string{tagService, tagInstance}},
	}
}

func sameTags(a, b []*databasev1.TagFamilySpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].GetName() != b[i].GetName() || len(a[i].GetTags()) != len(b[i].GetTags()) {
			return false
		}
		for j, t := range a[i].GetTags() {
			u := b[i].GetTags()[j]
			if t.GetName() != u.GetName() || t.GetType() != u.GetType() {
				return false
			}
		}
	}
	return true
}

func sameFields(a, b []*databasev1.FieldSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].GetName() != b[i].GetName() || a[i].GetFieldType() != b[i].GetFieldType() {
			return false
		}
	}
	return true
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }

// ensureSchema creates the group and the stream or measure if missing and
// checks that existing ones fit the tool's writes. Its first call is bounded
// by connectTimeout and turns an unreachable target into ErrUnreachable.
func ensureSchema(ctx context.Context, conn grpc.ClientConnInterface, cfg Config, connectTimeout time.Duration) error {
	md := &commonv1.Metadata{Group: cfg.Group, Name: cfg.Name}
	catalog := commonv1.Catalog_CATALOG_STREAM
	switch cfg.Kind {
	case KindMeasure:
		catalog = commonv1.Catalog_CATALOG_MEASURE
	case KindTrace:
		catalog = commonv1.Catalog_CATALOG_TRACE
	}
	var l *oapLayout // the oap shape's, nil for the others
	if cfg.Shape == ShapeOAP {
		l = oapLayoutOf(cfg.Kind)
	}
	groups := databasev1.NewGroupRegistryServiceClient(conn)
	first, cancel := context.WithTimeout(ctx, connectTimeout)
	got, err := groups.Get(first, &databasev1.GroupRegistryServiceGetRequest{Group: cfg.Group})
	cancel()
	switch {
	case isCode(err, codes.NotFound):
		day := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
		ttlDays := uint32(7)
		if l != nil {
			ttlDays = l.ttlDays
		}
		_, err = groups.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
			Metadata: &commonv1.Metadata{Name: cfg.Group},
			Catalog:  catalog,
			ResourceOpts: &commonv1.ResourceOpts{
				ShardNum:        uint32(cfg.Shards),
				SegmentInterval: day,
				Ttl:             &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: ttlDays},
			},
		}})
		if err != nil && !isCode(err, codes.AlreadyExists) {
			return fmt.Errorf("create group %q: %w", cfg.Group, err)
		}
	case isCode(err, codes.Unavailable), isCode(err, codes.DeadlineExceeded):
		return fmt.Errorf("%w: no answer within %s: %w", ErrUnreachable, connectTimeout, err)
	case err != nil:
		return fmt.Errorf("get group %q: %w", cfg.Group, err)
	case got.GetGroup().GetCatalog() != catalog:
		return fmt.Errorf("group %q exists with catalog %s, a %s needs %s: choose another --group", cfg.Group, got.GetGroup().GetCatalog(), cfg.Kind, catalog)
	}
	switch cfg.Kind {
	case KindStream:
		err = ensureStream(ctx, conn, md, cfg.Shape)
	case KindTrace:
		return ensureTrace(ctx, conn, md)
	default:
		err = ensureMeasure(ctx, conn, md, cfg.Shape)
	}
	if err != nil || l == nil {
		return err
	}
	return ensureIndexRules(ctx, conn, l, md, catalog)
}

// ensureIndexRules creates the index rules OAP makes for l in md's group
// and their binding to md, those missing. Existing ones are left as they
// are.
func ensureIndexRules(ctx context.Context, conn grpc.ClientConnInterface, l *oapLayout, md *commonv1.Metadata, catalog commonv1.Catalog) error {
	rules := databasev1.NewIndexRuleRegistryServiceClient(conn)
	for _, r := range l.indexRules(md) {
		_, err := rules.Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: r})
		if err != nil && !isCode(err, codes.AlreadyExists) {
			return fmt.Errorf("create index rule %s/%s: %w", md.GetGroup(), r.GetMetadata().GetName(), err)
		}
	}
	b := l.binding(md, time.Now())
	_, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: b})
	if err != nil && !isCode(err, codes.AlreadyExists) {
		return fmt.Errorf("create index rule binding %s/%s: %w", md.GetGroup(), md.GetName(), err)
	}
	return nil
}

func ensureStream(ctx context.Context, conn grpc.ClientConnInterface, md *commonv1.Metadata, shape string) error {
	c := databasev1.NewStreamRegistryServiceClient(conn)
	want := streamSchema(md, shape)
	got, err := c.Get(ctx, &databasev1.StreamRegistryServiceGetRequest{Metadata: md})
	switch {
	case isCode(err, codes.NotFound):
		if _, err := c.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: want}); err != nil && !isCode(err, codes.AlreadyExists) {
			return fmt.Errorf("create stream %s/%s: %w", md.GetGroup(), md.GetName(), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get stream %s/%s: %w", md.GetGroup(), md.GetName(), err)
	case !sameTags(got.GetStream().GetTagFamilies(), want.GetTagFamilies()):
		return fmt.Errorf("stream %s/%s exists with other tags than the tool writes: choose another --name", md.GetGroup(), md.GetName())
	}
	return nil
}

func ensureMeasure(ctx context.Context, conn grpc.ClientConnInterface, md *commonv1.Metadata, shape string) error {
	c := databasev1.NewMeasureRegistryServiceClient(conn)
	want := measureSchema(md, shape)
	got, err := c.Get(ctx, &databasev1.MeasureRegistryServiceGetRequest{Metadata: md})
	switch {
	case isCode(err, codes.NotFound):
		if _, err := c.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: want}); err != nil && !isCode(err, codes.AlreadyExists) {
			return fmt.Errorf("create measure %s/%s: %w", md.GetGroup(), md.GetName(), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get measure %s/%s: %w", md.GetGroup(), md.GetName(), err)
	case !sameTags(got.GetMeasure().GetTagFamilies(), want.GetTagFamilies()) ||
		!sameFields(got.GetMeasure().GetFields(), want.GetFields()):
		return fmt.Errorf("measure %s/%s exists with other tags or fields than the tool writes: choose another --name", md.GetGroup(), md.GetName())
	}
	return nil
}

// waitServing polls a query until the write path knows the stream or
// measure: the liaison learns new schema through a watch, a moment after
// the registry call returned. Only NotFound is retried.
func waitServing(ctx context.Context, w workload, m *messages) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, _, err := w.queryPage(ctx, pageQuery{fromMs: m.baseMillis, toMs: m.baseMillis + 1, limit: 1})
		if err == nil || !isCode(err, codes.NotFound) {
			if err != nil && !isCode(err, codes.Unimplemented) {
				return fmt.Errorf("probe query: %w", err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("the target did not serve the new schema within 30s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
