// Package liaison is the client-facing write and query path: it validates
// BanyanDB-compatible writes against the schema, hashes their entity to a
// shard and publishes them through a queue.Client (the gRPC publisher in a
// cluster, the in-process bus in standalone), answering every message once its
// data node has acknowledged it durably.
package liaison

import (
	"log/slog"
	"time"

	"google.golang.org/grpc"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/queue"
)

// Deps are what the services need from the role.
type Deps struct {
	Logger *slog.Logger
	Schema *schema.Cache
	Queue  queue.Client
	// Counters count client writes; nil counts nothing.
	Counters WriteCounters
	// Now is the clock that versions data points written without a
	// version or message id; nil is time.Now.
	Now func() time.Time
	// Holders says which nodes holding a group's data a query cannot
	// reach; nil means every node that holds data is always asked
	// (standalone).
	Holders DataHolders
	// Answerers plans which data node aggregates which shards of a
	// group's points (Holders in a cluster, OneStore in standalone); nil
	// ships every point to the liaison.
	Answerers ShardAnswerers
	// AllowPartial answers a query OK without the unreachable holders,
	// counted in PartialAnswers, instead of UNAVAILABLE: an operator's
	// opt-in, off by default.
	AllowPartial   bool
	PartialAnswers Counter
	// TopNRankings answers MeasureService.TopN from the rankings the data
	// nodes keep as writes arrive (storage.Store.PreAggregateTopN) instead
	// of from the points: set it only where every data node keeps them.
	TopNRankings bool
}

// Services are the client-facing services of one liaison: the stream and
// measure services, the property service and the API version.
type Services struct {
	Stream   *StreamService
	Measure  *MeasureService
	Property *PropertyService
	Trace    *TraceService
	Version  *VersionService
}

// NewServices builds the write and query services.
func NewServices(cfg WriteConfig, deps Deps) *Services {
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.Default()
	}
	counters := deps.Counters
	if counters == nil {
		counters = noWriteCounters{}
	}
	view := newLayouts(logger, deps.Schema)
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	w := writer{logger: logger, schema: view, queue: deps.Queue, cfg: cfg, counters: counters, now: now, versions: &revisionClock{now: now}}
	partial := deps.PartialAnswers
	if partial == nil {
		partial = noCounter{}
	}
	q := &querier{logger: logger, schema: view, queue: deps.Queue, holders: deps.Holders, answerers: deps.Answerers, allowPartial: deps.AllowPartial, partial: partial, topNRankings: deps.TopNRankings}
	return &Services{
		Stream:   &StreamService{writer: w, query: q},
		Measure:  &MeasureService{writer: w, query: q},
		Property: newPropertyService(&w, q),
		Trace:    &TraceService{writer: w, query: q},
		Version:  newVersionService(),
	}
}

// Register adds the services to srv, which must use wire.Codec (the write
// streams receive and answer at the wire level); a unary request that does
// not decode is answered InvalidArgument (see decodeAsClientError).
func (s *Services) Register(srv *grpc.Server) {
	srv.RegisterService(decodeAsClientError(&commonv1.Service_ServiceDesc), s.Version)
	srv.RegisterService(decodeAsClientError(&streamv1.StreamService_ServiceDesc), s.Stream)
	srv.RegisterService(decodeAsClientError(&measurev1.MeasureService_ServiceDesc), s.Measure)
	srv.RegisterService(decodeAsClientError(&propertyv1.PropertyService_ServiceDesc), s.Property)
	srv.RegisterService(decodeAsClientError(&tracev1.TraceService_ServiceDesc), s.Trace)
}
