package wire

import "google.golang.org/protobuf/encoding/protowire"

// ParseTraceRequest reads a trace.v1.WriteRequest: metadata (1), tags (2,
// repeated TagValue: read into Point as one tag family), span (3, into
// Point.Span), version (4, into Point.Version and MessageID: a trace
// write's answer carries its version where a stream's carries its
// message id) and tag_spec (5, into Spec). Value stays nil: a span has
// no value message of its own; AppendSpanValue builds the one the data
// nodes store.
func ParseTraceRequest(b []byte, r *Request) error {
	r.Reset()
	p := &r.Point
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
			p.Tags = append(p.Tags, Value{})
			var merged bool
			merged, err = parseValue(f.v, tagMembers[:], &p.Tags[len(p.Tags)-1])
			p.Merged = p.Merged || merged
		case f.num == 3 && f.typ == protowire.BytesType:
			p.Span = f.v // a scalar: the last occurrence wins, as in protobuf
		case f.num == 4 && f.typ == protowire.VarintType:
			p.Version = int64(f.x)
			r.MessageID = f.x
		case f.num == 5 && f.typ == protowire.BytesType:
			r.Merged = r.Merged || len(r.Spec) > 0
			r.Spec = append(r.Spec, f.v)
			err = validate(f.v, traceTagSpecShape)
		}
		if err != nil {
			return err
		}
	}
	p.FamEnd = append(p.FamEnd, len(p.Tags))
	r.Merged = r.Merged || p.Merged
	return nil
}

// ParseSpanValue reads a cluster.v1.SpanValue: span_id (1), timestamp
// (2), tags (3, one TagFamilyForWrite), span (4).
func ParseSpanValue(b []byte, p *Point) error { return parseSpanValue(b, p, false) }

// parseSpanValue is ParseSpanValue; skipValues leaves the tags unread
// (see Options).
func parseSpanValue(b []byte, p *Point, skipValues bool) error {
	return parseElementLike(b, p, skipValues, true)
}

// ParseTraceWrite reads a cluster.v1.TraceWrite (laid out as StreamWrite:
// its version is field 7).
func ParseTraceWrite(b []byte, w *ClusterWrite, o Options) error {
	return parseClusterWrite(b, w, func(v []byte, p *Point) error { return parseSpanValue(v, p, o.SkipValues) })
}

// AppendSpanValue appends p, a span in schema order with its span id and
// timestamp set, as a cluster.v1.SpanValue: the tags as one family (an
// empty one included), as proto.Marshal encodes it.
func AppendSpanValue(b []byte, p *Point) []byte {
	if len(p.ElementID) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, p.ElementID)
	}
	if p.Timestamp != nil {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, p.Timestamp)
	}
	b = appendFamilies(b, 3, p)
	if len(p.Span) > 0 {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, p.Span)
	}
	return b
}

// AppendTraceWriteResponse appends a trace.v1.WriteResponse (metadata 1,
// version 2, status 3) as proto.Marshal encodes it; metadata is set when
// hasMetadata, possibly empty.
func AppendTraceWriteResponse(b []byte, metadata []byte, hasMetadata bool, version uint64, status string) []byte {
	if hasMetadata {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, metadata)
	}
	if version != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, version)
	}
	if status != "" {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, status)
	}
	return b
}

// ParseTraceWriteResponse reads a trace.v1.WriteResponse's version (2,
// into MessageID: what a trace write's answer is matched by) and status
// (3); metadata (1) is validated and skipped.
func ParseTraceWriteResponse(b []byte, r *WriteResponse) error {
	return parseWriteResponse(b, r, 2, 3, 1)
}

// AppendSpanIndex appends value, an encoded cluster.v1.SpanValue that
// parsed, without its span bytes (field 4): the span's entry in the data
// node's time index, which criteria read but never the span.
func AppendSpanIndex(b, value []byte) []byte {
	for rest := value; len(rest) > 0; {
		f, n, err := next(rest)
		if err != nil { // not a value that parsed: keep it whole
			return append(b, value...)
		}
		if f.num != 4 || f.typ != protowire.BytesType {
			b = append(b, rest[:n]...)
		}
		rest = rest[n:]
	}
	return b
}
