package liaison

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/queue"
)

// WriteConfig tunes the write path.
type WriteConfig struct {
	// AckTimeout bounds how long one message may wait for its data node's
	// ack; after it the client gets STATUS_INTERNAL_ERROR for that message.
	AckTimeout time.Duration
}

// DefaultAckTimeout is WriteConfig.AckTimeout's default.
const DefaultAckTimeout = 10 * time.Second

// writer holds what both write services share.
type writer struct {
	logger *slog.Logger
	schema *SchemaCache
	queue  queue.Client
	cfg    WriteConfig
}

// metadataTracker remembers a stream's metadata: BanyanDB clients send it
// on the first message and may omit it afterwards.
type metadataTracker struct{ current *commonv1.Metadata }

func (m *metadataTracker) resolve(md *commonv1.Metadata) (*commonv1.Metadata, *writeError) {
	if md != nil {
		m.current = md
	}
	if m.current == nil {
		return nil, &writeError{status: modelv1.Status_STATUS_METADATA_REQUIRED, reason: "the first message of a write stream must carry metadata"}
	}
	return m.current, nil
}

func notFound(kind string, md *commonv1.Metadata) *writeError {
	return &writeError{status: modelv1.Status_STATUS_NOT_FOUND, reason: kind + " " + md.GetGroup() + "/" + md.GetName() + " does not exist"}
}

func expired(md *commonv1.Metadata, current int64) *writeError {
	return &writeError{status: modelv1.Status_STATUS_EXPIRED_SCHEMA, reason: "metadata mod_revision " + itoa(md.GetModRevision()) + " is not the schema's " + itoa(current)}
}

// publish marshals rec and hands it to the publisher.
func (w *writer) publish(ctx context.Context, pub queue.BatchPublisher, topic queue.Topic, group string, shard uint32, rec proto.Message) (queue.Future, *writeError) {
	payload, err := proto.Marshal(rec)
	if err != nil {
		return nil, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: "encode: " + err.Error()}
	}
	f, err := pub.Publish(ctx, topic, queue.Message{Group: group, Shard: shard, Payload: payload})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			w.logger.Warn("publish failed", "group", group, "error", err)
		}
		return nil, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: err.Error()}
	}
	return f, nil
}

// StreamService serves banyandb.stream.v1.StreamService.
type StreamService struct {
	streamv1.UnimplementedStreamServiceServer
	writer
	query *querier
}

// Write implements the bidirectional write stream: every request gets a
// WriteResponse with its message_id once its data node acked it durably,
// or an error status.
func (s *StreamService) Write(srv streamv1.StreamService_WriteServer) error {
	var md metadataTracker
	var keyBuf []byte
	sess := writeSession[*streamv1.WriteRequest]{
		logger:  s.logger,
		recv:    srv.Recv,
		publish: s.queue.NewBatchPublisher(s.cfg.AckTimeout),
		send: func(p pendingWrite, st modelv1.Status) error {
			return srv.Send(&streamv1.WriteResponse{MessageId: p.messageID, Status: st.String(), Metadata: p.metadata})
		},
		handle: func(ctx context.Context, req *streamv1.WriteRequest, pub queue.BatchPublisher) pendingWrite {
			p := pendingWrite{messageID: req.GetMessageId()}
			m, werr := md.resolve(req.GetMetadata())
			if werr != nil {
				p.err = werr
				return p
			}
			p.metadata = m
			l := s.schema.snapshot().streams[nameKey{m.GetGroup(), m.GetName()}]
			switch {
			case l == nil:
				p.err = notFound("stream", m)
				return p
			case m.GetModRevision() > 0 && m.GetModRevision() != l.modRevision:
				p.err = expired(m, l.modRevision)
				return p
			}
			el, prep, werr := l.prepareStream(req, keyBuf)
			if werr != nil {
				p.err = werr
				return p
			}
			keyBuf = prep.seriesKey
			p.future, p.err = s.publish(ctx, pub, queue.TopicStreamWrite, l.group, prep.shard, &clusterv1.StreamWrite{
				Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
				Element: el, SchemaModRevision: l.modRevision,
			})
			return p
		},
	}
	return sess.run(srv.Context())
}

// MeasureService serves banyandb.measure.v1.MeasureService.
type MeasureService struct {
	measurev1.UnimplementedMeasureServiceServer
	writer
	query *querier
}

// Write is StreamService.Write for data points.
func (s *MeasureService) Write(srv measurev1.MeasureService_WriteServer) error {
	var md metadataTracker
	var keyBuf []byte
	sess := writeSession[*measurev1.WriteRequest]{
		logger:  s.logger,
		recv:    srv.Recv,
		publish: s.queue.NewBatchPublisher(s.cfg.AckTimeout),
		send: func(p pendingWrite, st modelv1.Status) error {
			return srv.Send(&measurev1.WriteResponse{MessageId: p.messageID, Status: st.String(), Metadata: p.metadata})
		},
		handle: func(ctx context.Context, req *measurev1.WriteRequest, pub queue.BatchPublisher) pendingWrite {
			p := pendingWrite{messageID: req.GetMessageId()}
			m, werr := md.resolve(req.GetMetadata())
			if werr != nil {
				p.err = werr
				return p
			}
			p.metadata = m
			l := s.schema.snapshot().measures[nameKey{m.GetGroup(), m.GetName()}]
			switch {
			case l == nil:
				p.err = notFound("measure", m)
				return p
			case m.GetModRevision() > 0 && m.GetModRevision() != l.modRevision:
				p.err = expired(m, l.modRevision)
				return p
			}
			dp, prep, werr := l.prepareMeasure(req, keyBuf)
			if werr != nil {
				p.err = werr
				return p
			}
			keyBuf = prep.seriesKey
			p.future, p.err = s.publish(ctx, pub, queue.TopicMeasureWrite, l.group, prep.shard, &clusterv1.MeasureWrite{
				Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
				DataPoint: dp, SchemaModRevision: l.modRevision,
			})
			return p
		},
	}
	return sess.run(srv.Context())
}
