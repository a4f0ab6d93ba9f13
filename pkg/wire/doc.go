// Package wire reads and writes the write path's protobuf messages at the
// wire level: the public stream.v1 and measure.v1 WriteRequest and
// WriteResponse, the cluster.v1 StreamWrite and MeasureWrite the liaison
// publishes, and the element and data point values inside them. It also
// holds the one gRPC codec every write-path server and client installs.
//
// Decoding a write with proto.Unmarshal allocates every tag value and costs
// more than the rest of a write's work; the write path needs only a few
// scalars, the kind of each value and the entity values, and forwards the
// value's bytes as they came. Every parser here keeps one contract:
//
//   - it returns an error wrapping ErrMalformed exactly when proto.Unmarshal
//     of the same bytes into the same message fails (lengths, varints, field
//     numbers, UTF-8 in string fields, nested messages included);
//   - otherwise it fills its view, and sets Merged when a singular field
//     occurs more than once. protobuf merges such occurrences, which the
//     view does not model: the caller then decodes the bytes with
//     proto.Unmarshal, encodes them with proto.Marshal (each field once)
//     and parses the result, which is never Merged;
//   - known fields with an unexpected wire type and unknown fields are
//     skipped, as proto.Unmarshal keeps them as unknown fields.
//
// Views alias the parsed bytes and are reused from one parse to the next.
// The differential tests and fuzz targets of this package hold every
// parser to that contract against proto.Unmarshal.
package wire
