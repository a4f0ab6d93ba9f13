package storage

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
)

// Listeners returns the store's listener for each data topic:
//
//   - TopicStreamWrite, TopicMeasureWrite: the whole batch is one synced
//     commit; Handle returns once it is durable, with per-message errors.
//     A Local batch's nested tag and field values are not validated again.
//   - TopicStreamQuery, TopicMeasureQuery: one reply per message (a
//     marshalled stream.v1 / measure.v1 QueryResponse, or a
//     cluster.v1.MeasurePartials for a measure query with a partial plan);
//     a query that fails gets an error and no reply.
//   - TopicPropertyWrite: cluster.v1.PropertyWrite, applied by the
//     revision rule and committed as one synced write (WriteProperties).
//   - TopicPropertyQuery: one cluster.v1.PropertyQueryResult per message.
//   - TopicTraceWrite: cluster.v1.TraceWrite, as the stream and measure
//     writes (one synced commit a batch).
//   - TopicTraceQuery: one cluster.v1.TraceQueryResult per message.
func (s *Store) Listeners() map[queue.Topic]queue.Listener {
	return map[queue.Topic]queue.Listener{
		queue.TopicStreamWrite:  queue.ListenerFunc(s.handleStreamWrite),
		queue.TopicMeasureWrite: queue.ListenerFunc(s.handleMeasureWrite),
		queue.TopicStreamQuery:  queue.ListenerFunc(s.handleStreamQuery),
		queue.TopicMeasureQuery: queue.ListenerFunc(s.handleMeasureQuery),
		queue.TopicPropertyWrite: queue.ListenerFunc(func(ctx context.Context, b queue.Batch) queue.Result {
			return queue.Result{Errs: s.WriteProperties(ctx, b.Messages)}
		}),
		queue.TopicPropertyQuery: queue.ListenerFunc(s.handlePropertyQuery),
		queue.TopicTraceWrite: queue.ListenerFunc(func(ctx context.Context, b queue.Batch) queue.Result {
			return queue.Result{Errs: s.write(ctx, b.Messages, newDecoder(tsdb.KindTrace, b.Local))}
		}),
		queue.TopicTraceQuery: queue.ListenerFunc(func(ctx context.Context, b queue.Batch) queue.Result {
			return handleQueries(ctx, b, func(ctx context.Context, m []byte) (proto.Message, error) {
				var q clusterv1.TraceQuery
				if err := proto.Unmarshal(m, &q); err != nil {
					return nil, fmt.Errorf("%w: trace query does not decode: %w", queue.ErrInvalidMessage, err)
				}
				return s.QueryTraces(ctx, &q)
			})
		}),
	}
}

// Subscribe registers every listener of Listeners with srv.
func (s *Store) Subscribe(srv queue.Server) error {
	for topic, l := range s.Listeners() {
		if err := srv.Subscribe(topic, l); err != nil {
			return fmt.Errorf("storage: subscribe %s: %w", topic, err)
		}
	}
	return nil
}

func (s *Store) handleStreamWrite(ctx context.Context, b queue.Batch) queue.Result {
	return queue.Result{Errs: s.write(ctx, b.Messages, newDecoder(tsdb.KindStream, b.Local))}
}

func (s *Store) handleMeasureWrite(ctx context.Context, b queue.Batch) queue.Result {
	return queue.Result{Errs: s.write(ctx, b.Messages, newDecoder(tsdb.KindMeasure, b.Local))}
}

func (s *Store) handleStreamQuery(ctx context.Context, b queue.Batch) queue.Result {
	return handleQueries(ctx, b, func(ctx context.Context, m []byte) (proto.Message, error) {
		var q clusterv1.StreamQuery
		if err := proto.Unmarshal(m, &q); err != nil {
			return nil, fmt.Errorf("%w: stream query does not decode: %w", queue.ErrInvalidMessage, err)
		}
		return s.QueryStreamResult(ctx, &q)
	})
}

func (s *Store) handleMeasureQuery(ctx context.Context, b queue.Batch) queue.Result {
	return handleQueries(ctx, b, func(ctx context.Context, m []byte) (proto.Message, error) {
		var q clusterv1.MeasureQuery
		if err := proto.Unmarshal(m, &q); err != nil {
			return nil, fmt.Errorf("%w: measure query does not decode: %w", queue.ErrInvalidMessage, err)
		}
		if q.GetPartial() != nil {
			return s.QueryMeasurePartials(ctx, &q)
		}
		return s.QueryMeasure(ctx, &q)
	})
}

func (s *Store) handlePropertyQuery(ctx context.Context, b queue.Batch) queue.Result {
	return handleQueries(ctx, b, func(ctx context.Context, m []byte) (proto.Message, error) {
		var q clusterv1.PropertyQuery
		if err := proto.Unmarshal(m, &q); err != nil {
			return nil, fmt.Errorf("%w: property query does not decode: %w", queue.ErrInvalidMessage, err)
		}
		return s.QueryProperties(ctx, &q)
	})
}

// handleQueries answers each message of a query batch in turn.
func handleQueries(ctx context.Context, b queue.Batch, query func(context.Context, []byte) (proto.Message, error)) queue.Result {
	res := queue.Result{Replies: make([][]byte, len(b.Messages))}
	fail := func(i int, err error) {
		if res.Errs == nil {
			res.Errs = make([]error, len(b.Messages))
		}
		res.Errs[i] = err
	}
	for i, m := range b.Messages {
		resp, err := query(ctx, m)
		if err == nil {
			res.Replies[i], err = proto.Marshal(resp)
		}
		if err != nil {
			fail(i, err)
		}
	}
	return res
}
