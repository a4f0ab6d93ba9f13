package wire

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// Request is a stream.v1 or measure.v1 WriteRequest read at the wire
// level. Both have the same field numbers: metadata (1), the element or
// data point (2), message_id (3) and the spec (4).
type Request struct {
	MessageID uint64
	// Metadata is the Metadata message as received; nil when absent.
	Metadata []byte
	// Value is the ElementValue or DataPointValue as received, parsed into
	// Point; nil when absent.
	Value []byte
	Point Point
	// Spec holds each occurrence of field 4: the tag family specs of a
	// stream write (a repeated field), the data point spec of a measure
	// write (at most one unless Merged).
	Spec [][]byte
	// Merged: a singular field occurs more than once, here or in Point.
	Merged bool
}

// Reset empties r, keeping its slices' memory.
func (r *Request) Reset() {
	*r = Request{Point: r.Point, Spec: r.Spec[:0]}
	r.Point.Reset()
}

// ParseStreamRequest reads a stream.v1.WriteRequest.
func ParseStreamRequest(b []byte, r *Request) error {
	return parseRequest(b, r, ParseElement, func(spec []byte) error {
		return validate(spec, tagFamilySpecShape)
	}, false)
}

// ParseMeasureRequest reads a measure.v1.WriteRequest.
func ParseMeasureRequest(b []byte, r *Request) error {
	return parseRequest(b, r, ParseDataPoint, func(spec []byte) error {
		return validate(spec, dataPointSpecShape, nested{1, tagFamilySpecShape})
	}, true)
}

func parseRequest(b []byte, r *Request, parseValue func([]byte, *Point) error, checkSpec func([]byte) error, singularSpec bool) error {
	r.Reset()
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			r.Merged = r.Merged || r.Metadata != nil
			r.Metadata = f.v
			err = validate(f.v, metadataShape)
		case f.num == 2 && f.typ == protowire.BytesType:
			r.Merged = r.Merged || r.Value != nil
			r.Value = f.v
			err = parseValue(f.v, &r.Point)
		case f.num == 3 && f.typ == protowire.VarintType:
			r.MessageID = f.x
		case f.num == 4 && f.typ == protowire.BytesType:
			r.Merged = r.Merged || singularSpec && len(r.Spec) > 0
			r.Spec = append(r.Spec, f.v)
			err = checkSpec(f.v)
		}
		if err != nil {
			return err
		}
	}
	r.Merged = r.Merged || r.Point.Merged
	return nil
}

// AppendWriteResponse appends a stream.v1 or measure.v1 WriteResponse
// (the same field numbers: message_id 1, status 2, metadata 3) as
// proto.Marshal encodes it. metadata is the Metadata's encoding; hasMetadata
// says whether the field is set (it may be set and empty).
func AppendWriteResponse(b []byte, messageID uint64, status string, metadata []byte, hasMetadata bool) []byte {
	if messageID != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, messageID)
	}
	if status != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, status)
	}
	if hasMetadata {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, metadata)
	}
	return b
}

// WriteResponse is the part of a stream.v1 or measure.v1 WriteResponse a
// writer reads: status aliases the parsed bytes.
type WriteResponse struct {
	MessageID uint64
	Status    []byte
}

// ParseWriteResponse reads message_id (1) and status (2) of a write
// response; metadata (3) is validated and skipped.
func ParseWriteResponse(b []byte, r *WriteResponse) error { return parseWriteResponse(b, r, 1, 2, 3) }

// parseWriteResponse reads a write response whose id, status and
// metadata are fields idNum, statusNum and mdNum.
func parseWriteResponse(b []byte, r *WriteResponse, idNum, statusNum, mdNum protowire.Number) error {
	*r = WriteResponse{}
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case f.num == idNum && f.typ == protowire.VarintType:
			r.MessageID = f.x
		case f.num == statusNum && f.typ == protowire.BytesType:
			if err := checkUTF8(f.v, "status"); err != nil {
				return err
			}
			r.Status = f.v
		case f.num == mdNum && f.typ == protowire.BytesType:
			if err := validate(f.v, metadataShape); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseRequestHead reads only message_id (3) and metadata (1) of a
// stream.v1 or measure.v1 WriteRequest, checking the wire structure of
// the request but not the contents of its fields: for a server that
// answers writes without reading them (cmd/writesink).
func ParseRequestHead(b []byte) (messageID uint64, metadata []byte, err error) {
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return 0, nil, err
		}
		b = b[n:]
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			metadata = f.v
		case f.num == 3 && f.typ == protowire.VarintType:
			messageID = f.x
		}
	}
	return messageID, metadata, nil
}
