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
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
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
	// counters is never nil.
	counters WriteCounters
}

// metadataTracker remembers a stream's metadata: BanyanDB clients send it
// on the first message and may omit it afterwards. currentRaw is its wire
// encoding when the fast path read it (nil otherwise), echoed as is in
// the responses.
type metadataTracker struct {
	current    *commonv1.Metadata
	currentRaw []byte
}

func (m *metadataTracker) resolve(md *commonv1.Metadata, raw []byte) (*commonv1.Metadata, *writeError) {
	if md != nil {
		// raw aliases the request's buffer, given back once it is handled:
		// keep a copy, made only when the metadata changes.
		if raw == nil || !bytes.Equal(raw, m.currentRaw) {
			raw = bytes.Clone(raw)
		} else {
			raw = m.currentRaw
		}
		m.current, m.currentRaw = md, raw
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

// received is one client request: its wire bytes and either what the
// fast path read from them (wire non-nil, md its decoded metadata) or the
// decoded request (req).
type received[T proto.Message] struct {
	raw  []byte
	wire *wireWrite
	md   *commonv1.Metadata
	req  T
	held mem.BufferSlice // raw's buffer when it is grpc's (see wireRequest)
}

// release gives the request's buffer back once handled: raw and wire
// alias it, so nothing handled may keep them (pendingWrite does not;
// metadataTracker copies what it keeps).
func (r received[T]) release() {
	if r.held != nil {
		r.held.Free()
	}
}

// metadataCache keeps the last Metadata decoded on the fast path: a client
// stream repeats the same one in every request, so it is decoded once.
// The cached message is shared by every write that uses it and never
// modified.
type metadataCache struct {
	raw []byte
	md  *commonv1.Metadata
}

func (c *metadataCache) decode(raw []byte) (*commonv1.Metadata, bool) {
	if c.md != nil && bytes.Equal(raw, c.raw) {
		return c.md, true
	}
	md := new(commonv1.Metadata)
	if proto.Unmarshal(raw, md) != nil {
		return nil, false
	}
	c.raw, c.md = bytes.Clone(raw), md
	return md, true
}

// recvWrite receives the next request keeping its wire bytes (see
// wireRequest). parse then reads them into w (reused: the result is only
// valid until the next call); a request it leaves to the slow path is
// decoded into newReq() as the stream's typed Recv would, with its error.
func recvWrite[T proto.Message](srv grpc.ServerStream, in *wireRequest, w *wireWrite, mdc *metadataCache, parse func([]byte, *wireWrite) bool, newReq func() T) (received[T], error) {
	*in = wireRequest{} // the stream's, reused: the last request was handled and released
	if err := srv.RecvMsg(in); err != nil {
		return received[T]{}, err
	}
	b := in.bytes()
	if parse(b, w) {
		r := received[T]{raw: b, wire: w, held: in.held}
		if w.metadata == nil {
			return r, nil
		}
		if md, ok := mdc.decode(w.metadata); ok {
			r.md = md
			return r, nil
		}
	}
	req := newReq()
	if err := proto.Unmarshal(b, req); err != nil {
		in.release()
		// What grpc's typed Recv answers for a message that does not decode.
		return received[T]{}, status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return received[T]{raw: b, req: req, held: in.held}, nil
}

// decodeLate decodes a request the fast path read but could not prepare.
// It does not fail: the fast path only reads well-formed requests.
func decodeLate[T proto.Message](in received[T], req T) (T, *writeError) {
	if err := proto.Unmarshal(in.raw, req); err != nil {
		return req, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: "decode: " + err.Error()}
	}
	return req, nil
}

// rawField returns the bytes of field n (length-delimited) of a request's
// wire bytes when it occurs exactly once; ok is false otherwise (absent,
// repeated, which protobuf merges, or another wire type).
func rawField(b []byte, n protowire.Number) (v []byte, ok bool) {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(num, typ, b)
		if l < 0 {
			return nil, false
		}
		if num == n {
			if typ != protowire.BytesType || v != nil {
				return nil, false
			}
			fv, fl := protowire.ConsumeBytes(b)
			if fl < 0 {
				return nil, false
			}
			v = fv
			if v == nil {
				v = []byte{}
			}
		}
		b = b[l:]
	}
	return v, v != nil
}

// appendWrite encodes a clusterv1.StreamWrite or MeasureWrite (same field
// numbers) around value, the marshalled ElementValue or DataPointValue, the
// way proto.Marshal would encode the struct: fields in number order, zero
// scalars left out, the message field always present.
func appendWrite(b []byte, group, name string, shard uint32, seriesKey, value []byte, rev int64) []byte {
	if group != "" {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, group)
	}
	if name != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, name)
	}
	if shard != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(shard))
	}
	if len(seriesKey) > 0 {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, seriesKey)
	}
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendBytes(b, value)
	if rev != 0 {
		b = protowire.AppendTag(b, 6, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(rev))
	}
	return b
}

// writeSize bounds appendWrite's output.
func writeSize(group, name string, seriesKey, value []byte) int {
	return len(group) + len(name) + len(seriesKey) + len(value) + 6*protowire.SizeVarint(1<<63)
}

// encodeWrite is the payload of one write: value spliced in as received
// when the request carried it once and the liaison did not rewrite it
// (spliced non-nil), otherwise rec marshalled. A spliced payload is built in a
// buffer of payloadPool, returned as buf for the answer loop to give back
// once the write is acked (see pendingWrite.payloadAcked); buf is nil
// otherwise.
func encodeWrite(l *layout, prep prepared, spliced []byte, rec proto.Message) (payload []byte, buf *[]byte, err error) {
	if spliced != nil {
		buf = payloadPool.Get().(*[]byte)
		if n := writeSize(l.group, l.name, prep.seriesKey, spliced); cap(*buf) < n {
			*buf = make([]byte, 0, n)
		}
		*buf = appendWrite((*buf)[:0], l.group, l.name, prep.shard, prep.seriesKey, spliced, l.modRevision)
		return *buf, buf, nil
	}
	payload, err = proto.Marshal(rec)
	return payload, nil, err
}

// payloadPool recycles the buffers of encoded writes: at ~300 bytes a
// write they were the largest allocation of the write path. A payload is
// free again once its future succeeded (queue.Future says the queue reads
// it no more then); after a failure it is left to the GC.
var payloadPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledPayload keeps a rare huge write from pinning its buffer in the pool.
const maxPooledPayload = 16 << 10

// publish hands one encoded write to the publisher.
func (w *writer) publish(ctx context.Context, pub queue.BatchPublisher, topic queue.Topic, group string, shard uint32, payload []byte, err error) (queue.Future, *writeError) {
	if err != nil {
		return queue.Future{}, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: "encode: " + err.Error()}
	}
	f, err := pub.Publish(ctx, topic, queue.Message{Group: group, Shard: shard, Payload: payload})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			w.logger.Warn("publish failed", "group", group, "topic", string(topic), "shard", shard, "error", err)
		}
		return queue.Future{}, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: err.Error()}
	}
	return f, nil
}

// writeRequest is what the stream and measure WriteRequests share.
type writeRequest interface {
	proto.Message
	GetMessageId() uint64
	GetMetadata() *commonv1.Metadata
}

// kindLayout is a stream's or a measure's schema as its write path uses it.
type kindLayout[Req writeRequest] interface {
	base() *layout
	// fast prepares a request the wire-level parser read; false sends it
	// down the slow path.
	fast(w *wireWrite, keyBuf []byte) (prepared, bool)
	// slow validates a decoded request. unchanged reports that the value
	// is the request's own, so its wire bytes can be forwarded as they came;
	// otherwise rec is the record to encode.
	slow(req Req, keyBuf []byte) (rec proto.Message, unchanged bool, p prepared, werr *writeError)
}

// writeKind is what differs between the stream and the measure write path.
type writeKind[Req writeRequest] struct {
	name   string // "stream" or "measure", for NOT_FOUND reasons
	topic  queue.Topic
	parse  func([]byte, *wireWrite) bool
	newReq func() Req
	lookup func(*schemaSnapshot, nameKey) kindLayout[Req] // nil when unknown
}

var (
	streamKind = &writeKind[*streamv1.WriteRequest]{
		name: "stream", topic: queue.TopicStreamWrite, parse: parseStreamRequest,
		newReq: func() *streamv1.WriteRequest { return new(streamv1.WriteRequest) },
		lookup: func(s *schemaSnapshot, k nameKey) kindLayout[*streamv1.WriteRequest] {
			if l := s.streams[k]; l != nil {
				return l
			}
			return nil
		},
	}
	measureKind = &writeKind[*measurev1.WriteRequest]{
		name: "measure", topic: queue.TopicMeasureWrite, parse: parseMeasureRequest,
		newReq: func() *measurev1.WriteRequest { return new(measurev1.WriteRequest) },
		lookup: func(s *schemaSnapshot, k nameKey) kindLayout[*measurev1.WriteRequest] {
			if l := s.measures[k]; l != nil {
				return l
			}
			return nil
		},
	}
)

func (l *streamLayout) base() *layout { return l.layout }

func (l *streamLayout) fast(w *wireWrite, keyBuf []byte) (prepared, bool) {
	return l.fastPrepare(w, keyBuf)
}

func (l *streamLayout) slow(req *streamv1.WriteRequest, keyBuf []byte) (proto.Message, bool, prepared, *writeError) {
	el, prep, werr := l.prepareStream(req, keyBuf)
	if werr != nil {
		return nil, false, prep, werr
	}
	return &clusterv1.StreamWrite{
		Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
		Element: el, SchemaModRevision: l.modRevision,
	}, el == req.GetElement(), prep, nil
}

func (l *measureLayout) base() *layout { return l.layout }

func (l *measureLayout) fast(w *wireWrite, keyBuf []byte) (prepared, bool) {
	return l.fastPrepareMeasure(w, keyBuf)
}

func (l *measureLayout) slow(req *measurev1.WriteRequest, keyBuf []byte) (proto.Message, bool, prepared, *writeError) {
	dp, prep, werr := l.prepareMeasure(req, keyBuf)
	if werr != nil {
		return nil, false, prep, werr
	}
	return &clusterv1.MeasureWrite{
		Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
		DataPoint: dp, SchemaModRevision: l.modRevision,
	}, dp == req.GetDataPoint(), prep, nil
}

// serveWrites runs one client Write stream of either kind: every request
// gets an answer with its message_id once its data node acked it durably,
// or an error status.
func serveWrites[Req writeRequest](w *writer, srv grpc.ServerStream, k *writeKind[Req], send func(pendingWrite, modelv1.Status) error) error {
	var md metadataTracker
	var mdc metadataCache
	var keyBuf []byte
	var wire wireWrite
	var in wireRequest // received into, one request at a time
	recvCount := receivedCounter{src: w.counters, kind: k.name}
	answerCount := answeredCounter{src: w.counters, kind: k.name}
	sess := writeSession[received[Req]]{
		logger: w.logger,
		kind:   k.name,
		recv: func() (received[Req], error) {
			return recvWrite(srv, &in, &wire, &mdc, k.parse, k.newReq)
		},
		publish: w.queue.NewBatchPublisher(w.cfg.AckTimeout),
		send: func(p pendingWrite, st modelv1.Status) error {
			if err := send(p, st); err != nil {
				return err
			}
			answerCount.inc(p.metadata.GetGroup(), st)
			return nil
		},
		handle: func(ctx context.Context, in received[Req], pub queue.BatchPublisher) pendingWrite {
			defer in.release()
			req := in.req
			var p pendingWrite
			var reqMD *commonv1.Metadata
			var reqMDRaw []byte
			if in.wire != nil {
				p.messageID, reqMD, reqMDRaw = in.wire.messageID, in.md, in.wire.metadata
			} else {
				p.messageID, reqMD = req.GetMessageId(), req.GetMetadata()
			}
			m, werr := md.resolve(reqMD, reqMDRaw)
			recvCount.inc(m.GetGroup())
			if werr != nil {
				p.err = werr
				return p
			}
			p.metadata, p.metadataRaw = m, md.currentRaw
			kl := k.lookup(w.schema.snapshot(), nameKey{m.GetGroup(), m.GetName()})
			if kl == nil {
				p.err = notFound(k.name, m)
				return p
			}
			l := kl.base()
			if m.GetModRevision() > 0 && m.GetModRevision() != l.modRevision {
				p.err = expired(m, l.modRevision)
				return p
			}
			if in.wire != nil {
				if prep, ok := kl.fast(in.wire, keyBuf); ok {
					keyBuf = prep.seriesKey
					payload, buf, err := encodeWrite(l, prep, in.wire.value, nil)
					p.future, p.err = w.publish(ctx, pub, k.topic, l.group, prep.shard, payload, err)
					p.payload = buf
					return p
				}
				if req, p.err = decodeLate(in, k.newReq()); p.err != nil {
					return p
				}
			}
			rec, unchanged, prep, werr := kl.slow(req, keyBuf)
			if werr != nil {
				p.err = werr
				return p
			}
			keyBuf = prep.seriesKey
			var spliced []byte
			if unchanged { // not rewritten from a tag family or data point spec
				spliced, _ = rawField(in.raw, 2)
			}
			payload, buf, err := encodeWrite(l, prep, spliced, rec)
			p.future, p.err = w.publish(ctx, pub, k.topic, l.group, prep.shard, payload, err)
			p.payload = buf
			return p
		},
	}
	return sess.run(srv.Context())
}

// sendWriteResponse answers one write on srv: a stream.v1 or measure.v1
// WriteResponse (same fields), encoded by hand with the request's metadata
// echoed as it came, when the fast path read it.
func sendWriteResponse(srv grpc.ServerStream) func(pendingWrite, modelv1.Status) error {
	// One wrapper for the stream: SendMsg has encoded it when it returns,
	// and only the answer loop sends. The bytes themselves are written
	// after SendMsg returns, so each response has its own.
	var resp wireResponse
	return func(p pendingWrite, st modelv1.Status) error {
		md := p.metadataRaw
		if md == nil && p.metadata != nil {
			var err error
			if md, err = proto.Marshal(p.metadata); err != nil {
				return status.Errorf(codes.Internal, "encode write response: %v", err)
			}
		}
		name := st.String()
		b := make([]byte, 0, 2*binary.MaxVarintLen64+len(name)+len(md))
		resp.set(appendWriteResponse(b, p.messageID, name, md, p.metadata != nil))
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
	return serveWrites(&s.writer, srv, streamKind, sendWriteResponse(srv))
}

// MeasureService serves banyandb.measure.v1.MeasureService.
type MeasureService struct {
	measurev1.UnimplementedMeasureServiceServer
	writer
	query *querier
}

// Write is StreamService.Write for data points.
func (s *MeasureService) Write(srv measurev1.MeasureService_WriteServer) error {
	return serveWrites(&s.writer, srv, measureKind, sendWriteResponse(srv))
}
