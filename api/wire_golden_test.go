package api

import (
	"bytes"
	"encoding/hex"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// The expected bytes below are written out by hand from the field numbers
// and wire types of the BanyanDB v0.10 protos (tag = field<<3 | wire type;
// wire type 0 = varint, 1 = 64-bit, 2 = length-delimited), not produced by
// the code under test. Each line is one field; lengths are counted by hand.

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func b(v ...byte) []byte { return v }

func TestGoldenStreamWriteRequest(t *testing.T) {
	want := cat(
		b(0x0a, 0x06),                              // 1 metadata, len 6
		b(0x0a, 0x01, 'g'),                         //   1 group "g"
		b(0x12, 0x01, 's'),                         //   2 name "s"
		b(0x12, 0x3a),                              // 2 element, len 58
		b(0x0a, 0x02, 'e', '1'),                    //   1 element_id "e1"
		b(0x12, 0x04, 0x08, 0x01, 0x10, 0x02),      //   2 timestamp {seconds 1, nanos 2}
		b(0x1a, 0x2e),                              //   3 tag_families[0], len 46
		b(0x0a, 0x05, 0x12, 0x03, 0x0a, 0x01, 'a'), //     tags[0] {2 str {1 "a"}}
		b(0x0a, 0x04, 0x22, 0x02, 0x08, 0x05),      //     tags[1] {4 int {1 5}}
		b(0x0a, 0x08, 0x1a, 0x06, 0x0a, 0x01, 'x', 0x0a, 0x01, 'y'), //     tags[2] {3 str_array {1 "x", 1 "y"}}
		b(0x0a, 0x06, 0x2a, 0x04, 0x0a, 0x02, 0x01, 0x02),           //     tags[3] {5 int_array {1 packed [1,2]}}
		b(0x0a, 0x03, 0x32, 0x01, 0x01),                             //     tags[4] {6 binary_data "\x01"}
		b(0x0a, 0x02, 0x08, 0x00),                                   //     tags[5] {1 null NULL_VALUE}
		b(0x0a, 0x04, 0x3a, 0x02, 0x08, 0x03),                       //     tags[6] {7 timestamp {seconds 3}}
		b(0x18, 0x07),                                               // 3 message_id 7
	)
	msg := &streamv1.WriteRequest{
		Metadata: &commonv1.Metadata{Group: "g", Name: "s"},
		Element: &streamv1.ElementValue{
			ElementId: "e1",
			Timestamp: &timestamppb.Timestamp{Seconds: 1, Nanos: 2},
			TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{
				{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "a"}}},
				{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: 5}}},
				{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"x", "y"}}}},
				{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{1, 2}}}},
				{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte{0x01}}},
				{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}},
				{Value: &modelv1.TagValue_Timestamp{Timestamp: &timestamppb.Timestamp{Seconds: 3}}},
			}}},
		},
		MessageId: 7,
	}
	checkGolden(t, msg, want, &streamv1.WriteRequest{})
}

func TestGoldenMeasureWriteRequest(t *testing.T) {
	want := cat(
		b(0x0a, 0x06, 0x0a, 0x01, 'g', 0x12, 0x01, 'm'), // 1 metadata {group "g", name "m"}
		b(0x12, 0x2e),             // 2 data_point, len 46
		b(0x0a, 0x02, 0x08, 0x01), //   1 timestamp {seconds 1}
		b(0x12, 0x07, 0x0a, 0x05, 0x12, 0x03, 0x0a, 0x01, 'a'),        //   2 tag_families[0] {tags[0] {str "a"}}
		b(0x1a, 0x04, 0x1a, 0x02, 0x08, 0x09),                         //   3 fields[0] {3 int {1 9}}
		b(0x1a, 0x0b, 0x2a, 0x09, 0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f), //   3 fields[1] {5 float {1 double 1.5}}
		b(0x1a, 0x05, 0x12, 0x03, 0x0a, 0x01, 's'),                    //   3 fields[2] {2 str {1 "s"}}
		b(0x1a, 0x03, 0x22, 0x01, 0x02),                               //   3 fields[3] {4 binary_data "\x02"}
		b(0x20, 0x04),                                                 //   4 version 4
		b(0x18, 0x08),                                                 // 3 message_id 8
	)
	msg := &measurev1.WriteRequest{
		Metadata: &commonv1.Metadata{Group: "g", Name: "m"},
		DataPoint: &measurev1.DataPointValue{
			Timestamp: &timestamppb.Timestamp{Seconds: 1},
			TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{
				{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "a"}}},
			}}},
			Fields: []*modelv1.FieldValue{
				{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: 9}}},
				{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: 1.5}}},
				{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: "s"}}},
				{Value: &modelv1.FieldValue_BinaryData{BinaryData: []byte{0x02}}},
			},
			Version: 4,
		},
		MessageId: 8,
	}
	checkGolden(t, msg, want, &measurev1.WriteRequest{})
}

// The v0.10 trap: WriteResponse.status is a string holding the Status name.
func TestGoldenWriteResponseStatusIsAString(t *testing.T) {
	want := cat(
		b(0x08, 0x07), // 1 message_id 7
		b(0x12, 0x0e), // 2 status, string of 14 bytes
		[]byte("STATUS_SUCCEED"),
	)
	msg := &streamv1.WriteResponse{MessageId: 7, Status: modelv1.Status_STATUS_SUCCEED.String()}
	checkGolden(t, msg, want, &streamv1.WriteResponse{})
}

func checkGolden(t *testing.T, msg proto.Message, want []byte, decoded proto.Message) {
	t.Helper()
	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("wire bytes differ\n got: %s\nwant: %s", hex.EncodeToString(got), hex.EncodeToString(want))
	}
	if err := proto.Unmarshal(want, decoded); err != nil {
		t.Fatalf("hand-built bytes do not decode: %v", err)
	}
	if !proto.Equal(decoded, msg) {
		t.Fatalf("hand-built bytes decode to %v, want %v", decoded, msg)
	}
}
