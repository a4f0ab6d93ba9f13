package liaison

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/wire"
)

// WriteConfig tunes the write path.
type WriteConfig struct {
	// AckTimeout bounds how long one message may wait for its data node's
	// ack; after it the client gets STATUS_INTERNAL_ERROR for that message.
	AckTimeout time.Duration
}

// DefaultAckTimeout is WriteConfig.AckTimeout's default.
const DefaultAckTimeout = 10 * time.Second

const internalError = modelv1.Status_STATUS_INTERNAL_ERROR

// writer holds what every write service shares.
type writer struct {
	logger *slog.Logger
	schema *layouts
	queue  queue.Client
	cfg    WriteConfig
	// counters is never nil.
	counters WriteCounters
	now      func() time.Time
	versions *revisionClock // stream versions and property revisions
}

// model is what differs between the data models' write paths: a data
// model adds one of these and a wire parser, and shares the rest.
type model struct {
	name  string // "stream", "measure" or "trace", for logs, metrics and reasons
	topic queue.Topic
	// value names the request's element or data point, for reasons.
	value string
	parse func([]byte, *wire.Request) error
	// canonical decodes a request into its typed message and encodes it
	// again, each field once: the parse of the result is never Merged.
	canonical  func([]byte) ([]byte, error)
	decodeSpec func([][]byte) (*spec, error)
	// appendValue encodes a write's values (rebuilt in schema order).
	appendValue func([]byte, *wire.Point) []byte
	// versioned: a write without a version gets one (see withVersion).
	versioned bool
	// span: the write is a span (prepareSpan), which carries its version
	// in the request and is always re-encoded (a SpanValue).
	span bool
	// appendResponse encodes the answer to one write with status.
	appendResponse func(b []byte, p *pendingWrite, status string) []byte
	lookup         func(*schemaSnapshot, nameKey) *layout // nil when unknown
}

// appendWriteResponse is the stream and measure answer: a stream.v1 or
// measure.v1 WriteResponse (same fields) with the metadata echoed as it came.
func appendWriteResponse(b []byte, p *pendingWrite, status string) []byte {
	return wire.AppendWriteResponse(b, p.messageID, status, p.metadataRaw, p.metadata != nil)
}

func canonical[T proto.Message](newReq func() T) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		req := newReq()
		if err := proto.Unmarshal(b, req); err != nil {
			return nil, err
		}
		return proto.MarshalOptions{Deterministic: true}.Marshal(req)
	}
}

var (
	streamModel = &model{
		name: "stream", topic: queue.TopicStreamWrite, value: "element",
		parse:          wire.ParseStreamRequest,
		canonical:      canonical(func() *streamv1.WriteRequest { return new(streamv1.WriteRequest) }),
		decodeSpec:     decodeStreamSpec,
		appendValue:    wire.AppendElement,
		appendResponse: appendWriteResponse,
		lookup: func(s *schemaSnapshot, k nameKey) *layout {
			if l := s.streams[k]; l != nil {
				return l.layout
			}
			return nil
		},
	}
	measureModel = &model{
		name: "measure", topic: queue.TopicMeasureWrite, value: "data_point",
		parse:          wire.ParseMeasureRequest,
		canonical:      canonical(func() *measurev1.WriteRequest { return new(measurev1.WriteRequest) }),
		decodeSpec:     decodeMeasureSpec,
		appendValue:    wire.AppendDataPoint,
		appendResponse: appendWriteResponse,
		versioned:      true,
		lookup: func(s *schemaSnapshot, k nameKey) *layout {
			if l := s.measures[k]; l != nil {
				return l.layout
			}
			return nil
		},
	}
)

// metadataTracker remembers a stream's metadata: BanyanDB clients send it
// on the first message and may omit it afterwards. raw is its encoding as
// received, echoed as is in the responses.
type metadataTracker struct {
	current *commonv1.Metadata
	raw     []byte
	decoded metadataCache
}

// resolve returns the metadata in force after a request carrying raw (nil
// when it carries none). raw aliases the request's buffer, given back once
// it is handled: the tracker keeps a copy, made only when it changes.
func (m *metadataTracker) resolve(raw []byte) (*commonv1.Metadata, *writeError) {
	if raw != nil && (m.current == nil || !bytes.Equal(raw, m.raw)) {
		md, err := m.decoded.decode(raw)
		if err != nil { // the wire parser validated raw: not the client's doing
			return nil, &writeError{status: internalError, reason: "decode metadata: " + err.Error()}
		}
		m.current, m.raw = md, bytes.Clone(raw)
	}
	if m.current == nil {
		return nil, &writeError{status: modelv1.Status_STATUS_METADATA_REQUIRED, reason: "the first message of a write stream must carry metadata"}
	}
	return m.current, nil
}

// metadataCache keeps the last Metadata decoded: a client stream repeats
// the same one, so it is decoded once. The cached message is shared by
// every write that uses it and never modified.
type metadataCache struct {
	raw []byte
	md  *commonv1.Metadata
}

func (c *metadataCache) decode(raw []byte) (*commonv1.Metadata, error) {
	if c.md != nil && bytes.Equal(raw, c.raw) {
		return c.md, nil
	}
	md := new(commonv1.Metadata)
	if err := proto.Unmarshal(raw, md); err != nil {
		return nil, err
	}
	c.raw, c.md = bytes.Clone(raw), md
	return md, nil
}

func notFound(kind string, md *commonv1.Metadata) *writeError {
	return &writeError{status: modelv1.Status_STATUS_NOT_FOUND, reason: kind + " " + md.GetGroup() + "/" + md.GetName() + " does not exist"}
}

func expired(md *commonv1.Metadata, current int64) *writeError {
	return &writeError{status: modelv1.Status_STATUS_EXPIRED_SCHEMA, reason: "metadata mod_revision " + itoa(md.GetModRevision()) + " is not the schema's " + itoa(current)}
}

// request is one received write request: its frame, read into req.
type request struct {
	frame wire.Frame
	req   wire.Request
}

// recv receives the next request into r (reused: the last one was handled
// and released) and parses it. A request that does not parse ends the
// stream with the error grpc's typed Recv gives; a merged one is parsed
// again in its canonical form.
func (r *request) recv(srv grpc.ServerStream, m *model) error {
	if err := srv.RecvMsg(&r.frame); err != nil {
		return err
	}
	err := m.parse(r.frame.Raw, &r.req)
	if err == nil && r.req.Merged {
		var canon []byte
		if canon, err = m.canonical(r.frame.Raw); err == nil {
			r.frame.Release()
			r.frame.Raw = canon
			err = m.parse(canon, &r.req)
		}
	}
	if err != nil {
		r.frame.Release()
		return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return nil
}

// writeStream is the state one client Write stream keeps between messages.
type writeStream struct {
	w      *writer
	m      *model
	md     metadataTracker
	spec   specInForce
	recvd  receivedCounter
	keyBuf []byte
	// ordered is a spec-ordered write rebuilt in schema order; value is
	// its encoding; versioned is a value with its version set.
	ordered   wire.Point
	value     []byte
	versioned []byte
}

// handle validates and publishes one request: the one exit of every
// write to the queue.
func (s *writeStream) handle(ctx context.Context, r *request, pub queue.BatchPublisher) pendingWrite {
	defer r.frame.Release()
	req := &r.req
	p := pendingWrite{messageID: req.MessageID}
	md, werr := s.md.resolve(req.Metadata)
	s.recvd.inc(md.GetGroup())
	if werr != nil {
		p.err = werr
		return p
	}
	p.metadata, p.metadataRaw = md, s.md.raw
	if len(req.Spec) > 0 {
		s.spec.set(req.Spec)
	}
	l := s.m.lookup(s.w.schema.snapshot(), nameKey{Group: md.GetGroup(), Name: md.GetName()})
	if l == nil {
		p.err = notFound(s.m.name, md)
		return p
	}
	if md.GetModRevision() > 0 && md.GetModRevision() != l.modRevision {
		p.err = expired(md, l.modRevision)
		return p
	}
	value, prep, werr := s.prepare(l, req)
	if werr != nil {
		p.err = werr
		return p
	}
	s.keyBuf = prep.seriesKey
	if s.m.versioned && req.Point.Version == 0 {
		value = s.withVersion(value, req.MessageID)
	}
	buf := payloadPool.Get().(*[]byte)
	if n := wire.ClusterWriteSize(l.group, l.name, prep.seriesKey, value, l.indexSpec); cap(*buf) < n {
		*buf = make([]byte, 0, n)
	}
	var version int64
	switch {
	case s.m.span:
		version = req.Point.Version // the client's: the higher wins
	case !s.m.versioned:
		// Writes of one stream element, on one node or copies on several,
		// are ordered by when this liaison took them (measures carry their
		// own version).
		version = s.w.versions.next(0)
	}
	*buf = wire.AppendClusterWrite((*buf)[:0], l.group, l.name, prep.shard, prep.seriesKey, value, l.modRevision, version, l.indexSpec)
	p.payload = buf
	f, err := pub.Publish(ctx, s.m.topic, queue.Message{Group: l.group, Shard: prep.shard, Payload: *buf})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.w.logger.Warn("publish failed", "group", l.group, "topic", string(s.m.topic), "shard", prep.shard, "error", err)
		}
		p.err = &writeError{status: internalError, reason: err.Error()}
		return p
	}
	p.future = f
	return p
}

// prepare applies the rules to a write and returns the value to publish:
// the request's own bytes, or its values rebuilt in schema order when the
// spec in force names them in another.
func (s *writeStream) prepare(l *layout, req *wire.Request) ([]byte, prepared, *writeError) {
	if s.m.span {
		return s.prepareSpan(l, req)
	}
	if req.Value == nil {
		return nil, prepared{}, invalid("%s is required", s.m.value)
	}
	point := &req.Point
	if werr := checkTimestamp(point); werr != nil {
		return nil, prepared{}, werr
	}
	value := req.Value
	if s.spec.active() {
		var werr *writeError
		if point, werr = s.bySpec(l, point); werr != nil {
			return nil, prepared{}, werr
		}
		s.value = s.m.appendValue(s.value[:0], point)
		value = s.value
	}
	prep, werr := l.prepare(point, s.keyBuf)
	return value, prep, werr
}

// bySpec places point's values by the spec in force, in schema order, in
// s.ordered.
func (s *writeStream) bySpec(l *layout, point *wire.Point) (*wire.Point, *writeError) {
	pl, werr := s.spec.placement(l, s.m.decodeSpec)
	if werr == nil {
		werr = pl.reorder(l, point, &s.ordered)
	}
	if werr != nil {
		return nil, werr
	}
	return &s.ordered, nil
}

// withVersion returns value, a data point written without a version,
// with one, as BanyanDB sets it: the message id (SkyWalking OAP's is a
// nanosecond clock reading), or the time now when the message has none.
// Of two writes of one point the higher version wins, so OAP's later
// re-write of a metric is the one read back. The version is appended as a
// field: protobuf reads the last occurrence of a scalar.
func (s *writeStream) withVersion(value []byte, messageID uint64) []byte {
	v := messageID
	if v == 0 {
		v = uint64(s.w.now().UnixNano())
	}
	s.versioned = append(s.versioned[:0], value...)
	s.versioned = protowire.AppendTag(s.versioned, 4, protowire.VarintType)
	s.versioned = protowire.AppendVarint(s.versioned, v)
	return s.versioned
}

// payloadPool recycles the buffers of encoded writes: at ~300 bytes a
// write they were the largest allocation of the write path. A payload is
// free again once its future succeeded (queue.Future says the queue reads
// it no more then); after a failure it is left to the GC.
var payloadPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledPayload keeps a rare huge write from pinning its buffer in the pool.
const maxPooledPayload = 16 << 10

// serveWrites runs one client Write stream of model m: every request gets
// an answer with its message_id once its data node acked it durably, or
// an error status.
func serveWrites(w *writer, srv grpc.ServerStream, m *model) error {
	label := labelBySchema(w.schema)
	st := &writeStream{w: w, m: m, recvd: receivedCounter{src: w.counters, label: label, kind: m.name}}
	var in request // received into, one request at a time
	answerCount := answeredCounter{src: w.counters, label: label, kind: m.name}
	send := sendWriteResponse(srv, m)
	sess := writeSession[*request]{
		logger: w.logger,
		kind:   m.name,
		recv: func() (*request, error) {
			return &in, in.recv(srv, m)
		},
		publish: w.queue.NewBatchPublisher(w.cfg.AckTimeout),
		send: func(p pendingWrite, code modelv1.Status) error {
			if err := send(p, code); err != nil {
				return err
			}
			answerCount.inc(p.metadata.GetGroup(), code)
			return nil
		},
		handle: st.handle,
	}
	return sess.run(srv.Context())
}

// sendWriteResponse answers one write on srv, encoded by m, with the
// stream's metadata echoed as it came.
func sendWriteResponse(srv grpc.ServerStream, m *model) func(pendingWrite, modelv1.Status) error {
	// One frame for the stream: SendMsg has encoded it when it returns,
	// and only the answer loop sends. The bytes themselves are written
	// after SendMsg returns, so each response has its own.
	var resp wire.Frame
	return func(p pendingWrite, st modelv1.Status) error {
		name := st.String()
		b := make([]byte, 0, 2*binary.MaxVarintLen64+len(name)+len(p.metadataRaw))
		resp.Raw = m.appendResponse(b, &p, name)
		return srv.SendMsg(&resp)
	}
}

// StreamService serves banyandb.stream.v1.StreamService.
type StreamService struct {
	streamv1.UnimplementedStreamServiceServer
	writer
	query *querier
}

// Write implements the bidirectional write stream.
func (s *StreamService) Write(srv streamv1.StreamService_WriteServer) error {
	return serveWrites(&s.writer, srv, streamModel)
}

// MeasureService serves banyandb.measure.v1.MeasureService.
type MeasureService struct {
	measurev1.UnimplementedMeasureServiceServer
	writer
	query *querier
}

// Write is StreamService.Write for data points.
func (s *MeasureService) Write(srv measurev1.MeasureService_WriteServer) error {
	return serveWrites(&s.writer, srv, measureModel)
}
