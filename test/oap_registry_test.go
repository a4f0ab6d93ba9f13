package test

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// schemaObject is what every registry object has.
type schemaObject interface {
	proto.Message
	GetMetadata() *commonv1.Metadata
}

// registry is one database.v1 registry service as OAP's MetadataClient
// subclasses call it.
type registry[T schemaObject] struct {
	kind   string
	exist  func(context.Context, *commonv1.Metadata) (hasGroup, has bool, err error)
	create func(context.Context, T) error
	update func(context.Context, T) error
	get    func(context.Context, *commonv1.Metadata) (T, error)
}

// oapRegistries are the registry clients of one connection.
type oapRegistries struct {
	groups   databasev1.GroupRegistryServiceClient
	measures registry[*databasev1.Measure]
	streams  registry[*databasev1.Stream]
	traces   registry[*databasev1.Trace]
	props    registry[*databasev1.Property]
	rules    registry[*databasev1.IndexRule]
	bindings registry[*databasev1.IndexRuleBinding]
	topNs    registry[*databasev1.TopNAggregation]
	topNList func(context.Context, string) ([]*databasev1.TopNAggregation, error)
	topNDel  func(context.Context, *commonv1.Metadata) error
}

func newOAPRegistries(conn *grpc.ClientConn) *oapRegistries {
	ms := databasev1.NewMeasureRegistryServiceClient(conn)
	ss := databasev1.NewStreamRegistryServiceClient(conn)
	ts := databasev1.NewTraceRegistryServiceClient(conn)
	ps := databasev1.NewPropertyRegistryServiceClient(conn)
	rs := databasev1.NewIndexRuleRegistryServiceClient(conn)
	bs := databasev1.NewIndexRuleBindingRegistryServiceClient(conn)
	ns := databasev1.NewTopNAggregationRegistryServiceClient(conn)
	return &oapRegistries{
		groups: databasev1.NewGroupRegistryServiceClient(conn),
		measures: registry[*databasev1.Measure]{
			kind: "measure",
			exist: func(ctx context.Context, md *commonv1.Metadata) (bool, bool, error) {
				r, err := ms.Exist(ctx, &databasev1.MeasureRegistryServiceExistRequest{Metadata: md})
				return r.GetHasGroup(), r.GetHasMeasure(), err
			},
			create: func(ctx context.Context, o *databasev1.Measure) error {
				_, err := ms.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: o})
				return err
			},
			update: func(ctx context.Context, o *databasev1.Measure) error {
				_, err := ms.Update(ctx, &databasev1.MeasureRegistryServiceUpdateRequest{Measure: o})
				return err
			},
			get: func(ctx context.Context, md *commonv1.Metadata) (*databasev1.Measure, error) {
				r, err := ms.Get(ctx, &databasev1.MeasureRegistryServiceGetRequest{Metadata: md})
				return r.GetMeasure(), err
			},
		},
		streams: registry[*databasev1.Stream]{
			kind: "stream",
			exist: func(ctx context.Context, md *commonv1.Metadata) (bool, bool, error) {
				r, err := ss.Exist(ctx, &databasev1.StreamRegistryServiceExistRequest{Metadata: md})
				return r.GetHasGroup(), r.GetHasStream(), err
			},
			create: func(ctx context.Context, o *databasev1.Stream) error {
				_, err := ss.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: o})
				return err
			},
			update: func(ctx context.Context, o *databasev1.Stream) error {
				_, err := ss.Update(ctx, &databasev1.StreamRegistryServiceUpdateRequest{Stream: o})
				return err
			},
			get: func(ctx context.Context, md *commonv1.Metadata) (*databasev1.Stream, error) {
				r, err := ss.Get(ctx, &databasev1.StreamRegistryServiceGetRequest{Metadata: md})
				return r.GetStream(), err
			},
		},
		traces: registry[*databasev1.Trace]{
			kind: "trace",
			exist: func(ctx context.Context, md *commonv1.Metadata) (bool, bool, error) {
				r, err := ts.Exist(ctx, &databasev1.TraceRegistryServiceExistRequest{Metadata: md})
				return r.GetHasGroup(), r.GetHasTrace(), err
			},
			create: func(ctx context.Context, o *databasev1.Trace) error {
				_, err := ts.Create(ctx, &databasev1.TraceRegistryServiceCreateRequest{Trace: o})
				return err
			},
			update: func(ctx context.Context, o *databasev1.Trace) error {
				_, err := ts.Update(ctx, &databasev1.TraceRegistryServiceUpdateRequest{Trace: o})
				return err
			},
			get: func(ctx context.Context, md *commonv1.Metadata) (*databasev1.Trace, error) {
				r, err := ts.Get(ctx, &databasev1.TraceRegistryServiceGetRequest{Metadata: md})
				return r.GetTrace(), err
			},
		},
		props: registry[*databasev1.Property]{
			kind: "property",
			exist: func(ctx context.Context, md *commonv1.Metadata) (bool, bool, error) {
				r, err := ps.Exist(ctx, &databasev1.PropertyRegistryServiceExistRequest{Metadata: md})
				return r.GetHasGroup(), r.GetHasProperty(), err
			},
			create: func(ctx context.Context, o *databasev1.Property) error {
				_, err := ps.Create(ctx, &databasev1.PropertyRegistryServiceCreateRequest{Property: o})
				return err
			},
			update: func(ctx context.Context, o *databasev1.Property) error {
				_, err := ps.Update(ctx, &databasev1.PropertyRegistryServiceUpdateRequest{Property: o})
				return err
			},
			get: func(ctx context.Context, md *commonv1.Metadata) (*databasev1.Property, error) {
				r, err := ps.Get(ctx, &databasev1.PropertyRegistryServiceGetRequest{Metadata: md})
				return r.GetProperty(), err
			},
		},
		rules: registry[*databasev1.IndexRule]{
			kind: "index rule",
			create: func(ctx context.Context, o *databasev1.IndexRule) error {
				_, err := rs.Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: o})
				return err
			},
			update: func(ctx context.Context, o *databasev1.IndexRule) error {
				_, err := rs.Update(ctx, &databasev1.IndexRuleRegistryServiceUpdateRequest{IndexRule: o})
				return err
			},
			get: func(ctx context.Context, md *commonv1.Metadata) (*databasev1.IndexRule, error) {
				r, err := rs.Get(ctx, &databasev1.IndexRuleRegistryServiceGetRequest{Metadata: md})
				return r.GetIndexRule(), err
			},
		},
		bindings: registry[*databasev1.IndexRuleBinding]{
			kind: "index rule binding",
			create: func(ctx context.Context, o *databasev1.IndexRuleBinding) error {
				_, err := bs.Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: o})
				return err
			},
			update: func(ctx context.Context, o *databasev1.IndexRuleBinding) error {
				_, err := bs.Update(ctx, &databasev1.IndexRuleBindingRegistryServiceUpdateRequest{IndexRuleBinding: o})
				return err
			},
			get: func(ctx context.Context, md *commonv1.Metadata) (*databasev1.IndexRuleBinding, error) {
				r, err := bs.Get(ctx, &databasev1.IndexRuleBindingRegistryServiceGetRequest{Metadata: md})
				return r.GetIndexRuleBinding(), err
			},
		},
		topNs: registry[*databasev1.TopNAggregation]{
			kind: "topN aggregation",
			create: func(ctx context.Context, o *databasev1.TopNAggregation) error {
				_, err := ns.Create(ctx, &databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: o})
				return err
			},
			update: func(ctx context.Context, o *databasev1.TopNAggregation) error {
				_, err := ns.Update(ctx, &databasev1.TopNAggregationRegistryServiceUpdateRequest{TopNAggregation: o})
				return err
			},
			get: func(ctx context.Context, md *commonv1.Metadata) (*databasev1.TopNAggregation, error) {
				r, err := ns.Get(ctx, &databasev1.TopNAggregationRegistryServiceGetRequest{Metadata: md})
				return r.GetTopNAggregation(), err
			},
		},
		topNList: func(ctx context.Context, group string) ([]*databasev1.TopNAggregation, error) {
			r, err := ns.List(ctx, &databasev1.TopNAggregationRegistryServiceListRequest{Group: group})
			return r.GetTopNAggregation(), err
		},
		topNDel: func(ctx context.Context, md *commonv1.Metadata) error {
			_, err := ns.Delete(ctx, &databasev1.TopNAggregationRegistryServiceDeleteRequest{Metadata: md})
			return err
		},
	}
}
