package liaison

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/banyand/schema"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/wire"
)

// The test schema: group "g" with 4 shards; stream "s" (entity in two
// families), stream "ent" (one entity tag of every type) and measure "m".
const (
	testGroup     = "g"
	testShards    = 4
	testStreamRev = 7
	testEntRev    = 8
	testMeasRev   = 9
)

var (
	tString   = databasev1.TagType_TAG_TYPE_STRING
	tInteger  = databasev1.TagType_TAG_TYPE_INT
	tStrArr   = databasev1.TagType_TAG_TYPE_STRING_ARRAY
	tIntArr   = databasev1.TagType_TAG_TYPE_INT_ARRAY
	tBinary   = databasev1.TagType_TAG_TYPE_DATA_BINARY
	tTimeType = databasev1.TagType_TAG_TYPE_TIMESTAMP
)

func family(name string, tags ...any) *databasev1.TagFamilySpec {
	f := &databasev1.TagFamilySpec{Name: name}
	for i := 0; i < len(tags); i += 2 {
		f.Tags = append(f.Tags, &databasev1.TagSpec{Name: tags[i].(string), Type: tags[i+1].(databasev1.TagType)})
	}
	return f
}

func testGroupSchema() *commonv1.Group {
	return &commonv1.Group{
		Metadata:     &commonv1.Metadata{Name: testGroup},
		Catalog:      commonv1.Catalog_CATALOG_STREAM,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: testShards},
	}
}

// allTypes is a family with one tag of every type.
func allTypes(name string) *databasev1.TagFamilySpec {
	return family(name, "str", tString, "int", tInteger, "bin", tBinary, "sa", tStrArr, "ia", tIntArr, "ts", tTimeType)
}

func testStreamSchema() *databasev1.Stream {
	return &databasev1.Stream{
		Metadata:    &commonv1.Metadata{Group: testGroup, Name: "s", ModRevision: testStreamRev},
		TagFamilies: []*databasev1.TagFamilySpec{allTypes("base"), family("extra", "e", tString, "k", tInteger)},
		Entity:      &databasev1.Entity{TagNames: []string{"str", "k"}},
	}
}

func testEntStreamSchema() *databasev1.Stream {
	return &databasev1.Stream{
		Metadata:    &commonv1.Metadata{Group: testGroup, Name: "ent", ModRevision: testEntRev},
		TagFamilies: []*databasev1.TagFamilySpec{allTypes("f")},
		Entity:      &databasev1.Entity{TagNames: []string{"str", "int", "bin", "sa", "ia", "ts"}},
	}
}

func testMeasureSchema() *databasev1.Measure {
	return &databasev1.Measure{
		Metadata:    &commonv1.Metadata{Group: testGroup, Name: "m", ModRevision: testMeasRev},
		TagFamilies: []*databasev1.TagFamilySpec{allTypes("base"), family("extra", "e", tString, "k", tInteger)},
		Fields: []*databasev1.FieldSpec{
			{Name: "fi", FieldType: databasev1.FieldType_FIELD_TYPE_INT},
			{Name: "ff", FieldType: databasev1.FieldType_FIELD_TYPE_FLOAT},
			{Name: "fs", FieldType: databasev1.FieldType_FIELD_TYPE_STRING},
			{Name: "fb", FieldType: databasev1.FieldType_FIELD_TYPE_DATA_BINARY},
		},
		Entity: &databasev1.Entity{TagNames: []string{"str", "k"}},
	}
}

// newTestSchema returns a schema cache holding the test schema, filled
// the way the registry watch fills it.
func newTestSchema(t testing.TB) *schema.Cache {
	t.Helper()
	c := schema.NewCache(nil)
	var objs []registry.Object
	for _, m := range []proto.Message{testGroupSchema(), testStreamSchema(), testEntStreamSchema(), testMeasureSchema(), testTraceSchema()} {
		k, err := registry.KeyOf(m)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, registry.Object{Key: k, Revision: 10, Message: m})
	}
	c.Reset(objs, 10)
	return c
}

// newTestCache returns the liaison's view of the test schema.
func newTestCache(t testing.TB) *layouts {
	t.Helper()
	l := newLayouts(discardLogger, newTestSchema(t))
	s := l.snapshot()
	if len(s.streams) != 2 || len(s.measures) != 1 || len(s.traces) != 1 {
		t.Fatalf("test schema not usable: %d streams, %d measures, %d traces", len(s.streams), len(s.measures), len(s.traces))
	}
	return l
}

func streamMD(name string) *commonv1.Metadata {
	return &commonv1.Metadata{Group: testGroup, Name: name}
}

// Tag and field value constructors.

func vStr(s string) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: s}}}
}

func vInt(i int64) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: i}}}
}

func vBin(b []byte) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{BinaryData: b}}
}

func vStrs(s ...string) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: s}}}
}

func vInts(i ...int64) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: i}}}
}

func vTime(t time.Time) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Timestamp{Timestamp: timestamppb.New(t)}}
}

func vNull() *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}}
}

func fStr(s string) *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: s}}}
}

func fInt(i int64) *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: i}}}
}

func fFloat(f float64) *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: f}}}
}

func fBin(b []byte) *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_BinaryData{BinaryData: b}}
}

func fNull() *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Null{}}
}

func fam(tags ...*modelv1.TagValue) *modelv1.TagFamilyForWrite {
	return &modelv1.TagFamilyForWrite{Tags: tags}
}

// waitFunc is a queue.Waiter with its behaviour as a func.
type waitFunc func(ctx context.Context) error

func (f waitFunc) Wait(ctx context.Context, _ queue.Token) error { return f(ctx) }

// funcFuture is a future with its behaviour as a func.
func funcFuture(f func(ctx context.Context) error) queue.Future {
	return queue.NewFuture(waitFunc(f), queue.Token{})
}

// fakeFuture resolves to err.
func fakeFuture(err error) queue.Future {
	return funcFuture(func(context.Context) error { return err })
}

// fakeQueue records what the write path publishes; every future resolves
// to result(msg) (nil: acked).
type fakeQueue struct {
	result     func(queue.Message) error
	publishErr func(call int) error // call is 1-based; nil: Publish never fails

	mu     sync.Mutex
	calls  int
	topics []queue.Topic
	msgs   []queue.Message
}

func (q *fakeQueue) NewBatchPublisher(time.Duration) queue.BatchPublisher { return fakePublisher{q} }

func (q *fakeQueue) Broadcast(context.Context, queue.Topic, string, []byte) ([]queue.Reply, error) {
	return nil, queue.ErrNoNodes
}

func (q *fakeQueue) published() ([]queue.Topic, []queue.Message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.topics, q.msgs
}

type fakePublisher struct{ q *fakeQueue }

func (p fakePublisher) Publish(_ context.Context, topic queue.Topic, msg queue.Message) (queue.Future, error) {
	p.q.mu.Lock()
	p.q.calls++
	if p.q.publishErr != nil {
		if err := p.q.publishErr(p.q.calls); err != nil {
			p.q.mu.Unlock()
			return queue.Future{}, err
		}
	}
	p.q.topics = append(p.q.topics, topic)
	// A copy, as a listener makes: once its future succeeded the liaison
	// reuses the payload's buffer (queue.Future allows it).
	msg.Payload = bytes.Clone(msg.Payload)
	p.q.msgs = append(p.q.msgs, msg)
	p.q.mu.Unlock()
	if p.q.result == nil {
		return fakeFuture(nil), nil
	}
	return fakeFuture(p.q.result(msg)), nil
}

func (fakePublisher) Close() error { return nil }

// fakeStream is a Write stream: RecvMsg decodes the queued wire messages
// with the codec as grpc would (wire.Codec unless codec is set), SendMsg
// encodes each answer with it and records it decoded. Only the methods the
// write path calls are implemented.
type fakeStream[Req, Resp any] struct {
	grpc.ServerStream
	ctx   context.Context
	codec encoding.CodecV2
	in    [][]byte
	out   []*Resp
}

func (s *fakeStream[Req, Resp]) Context() context.Context { return s.ctx }

func (s *fakeStream[Req, Resp]) c() encoding.CodecV2 {
	if s.codec == nil {
		return wire.Codec()
	}
	return s.codec
}

func (s *fakeStream[Req, Resp]) RecvMsg(m any) error {
	if len(s.in) == 0 {
		return io.EOF
	}
	// A pooled buffer, as grpc's are, scribbled over when freed: a request
	// byte kept past its release shows up as garbage in the test's result.
	raw := append([]byte(nil), s.in[0]...)
	s.in = s.in[1:]
	data := mem.BufferSlice{mem.NewBuffer(&raw, scribblePool{})}
	defer data.Free() // grpc frees what it handed the codec
	if err := s.c().Unmarshal(data, m); err != nil {
		// What grpc's RecvMsg returns when the codec fails.
		return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return nil
}

func (s *fakeStream[Req, Resp]) Send(r *Resp) error { return s.SendMsg(r) }

func (s *fakeStream[Req, Resp]) SendMsg(m any) error {
	data, err := s.c().Marshal(m)
	if err != nil {
		return err
	}
	r := new(Resp)
	if err := proto.Unmarshal(data.Materialize(), any(r).(proto.Message)); err != nil {
		return err
	}
	s.out = append(s.out, r)
	return nil
}

func (s *fakeStream[Req, Resp]) Recv() (*Req, error) {
	m := new(Req)
	return m, s.RecvMsg(m)
}

// writeResult is what one Write call did.
type writeResult[Resp any] struct {
	resps []Resp
	msgs  []queue.Message
	err   error
}

var discardLogger = slog.New(slog.DiscardHandler)

func newTestServices(t testing.TB, q *fakeQueue) *Services {
	return NewServices(WriteConfig{}, Deps{Logger: discardLogger, Schema: newTestSchema(t), Queue: q, Now: testNow})
}

// runStreamWrite runs one StreamService.Write over the wire messages raw.
func runStreamWrite(svc *Services, q *fakeQueue, raw ...[]byte) writeResult[*streamv1.WriteResponse] {
	srv := &fakeStream[streamv1.WriteRequest, streamv1.WriteResponse]{ctx: context.Background(), in: raw}
	err := svc.Stream.Write(srv)
	_, msgs := q.published()
	return writeResult[*streamv1.WriteResponse]{resps: srv.out, msgs: msgs, err: err}
}

// runMeasureWrite runs one MeasureService.Write over the wire messages raw.
func runMeasureWrite(svc *Services, q *fakeQueue, raw ...[]byte) writeResult[*measurev1.WriteResponse] {
	srv := &fakeStream[measurev1.WriteRequest, measurev1.WriteResponse]{ctx: context.Background(), in: raw}
	err := svc.Measure.Write(srv)
	_, msgs := q.published()
	return writeResult[*measurev1.WriteResponse]{resps: srv.out, msgs: msgs, err: err}
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scribblePool is a mem.BufferPool that overwrites a buffer when it is
// given back, so that reading it afterwards cannot pass unnoticed.
type scribblePool struct{}

func (scribblePool) Get(n int) *[]byte { b := make([]byte, n); return &b }

func (scribblePool) Put(b *[]byte) {
	for i := range *b {
		(*b)[i] = 0xEE
	}
}

// testNow is the services' clock in tests: it versions data points
// written without a version or message id.
func testNow() time.Time { return time.Unix(1700000000, 0) }
