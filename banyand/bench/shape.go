package bench

import (
	"crypto/rand"
	"slices"
	"strconv"
	"strings"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// Shapes of a stream element's or a measure data point's tags (--shape).
// Both put the entity, service (string) and instance (int), first in the
// entity family (searchable for streams, default for measures); the rest
// differs. Traces have their own OAP-shaped tags and ignore the shape.
const (
	// ShapeRealistic is a client's write: seven tags of mixed types, the
	// entity's two plus a short string endpoint in the entity family, and
	// a --payload-bytes string message, a string array, an int array and
	// a 16-byte binary in the data family. The reported numbers use it.
	ShapeRealistic = "realistic"
	// ShapeLight carries one binary tag of --payload-bytes besides the
	// entity: the cheapest write, for comparison.
	ShapeLight = "light"
	// ShapeOAP is SkyWalking OAP's own layout of a minute metric or a log
	// record, with its group, families, index rules and values (oap.go);
	// it does not have the entity tags the other two share.
	ShapeOAP = "oap"
)

// Names of the realistic shape's tags besides the entity.
const (
	tagMessage = "message"
	tagLabels  = "labels"
	tagCodes   = "codes"
	tagBlob    = "blob"
	blobBytes  = 16
)

// endpointsPerInstance: the endpoint tag takes this many values an entity.
const endpointsPerInstance = 4

// entityTagSpecs are the entity family's tags in schema order.
func entityTagSpecs(shape string) []*databasev1.TagSpec {
	tags := []*databasev1.TagSpec{
		{Name: tagService, Type: databasev1.TagType_TAG_TYPE_STRING},
		{Name: tagInstance, Type: databasev1.TagType_TAG_TYPE_INT},
	}
	if shape == ShapeRealistic {
		tags = append(tags, &databasev1.TagSpec{Name: tagEndpoint, Type: databasev1.TagType_TAG_TYPE_STRING})
	}
	return tags
}

// dataTagSpecs are the data family's tags in schema order.
func dataTagSpecs(shape string) []*databasev1.TagSpec {
	if shape != ShapeRealistic {
		return []*databasev1.TagSpec{{Name: tagPayload, Type: databasev1.TagType_TAG_TYPE_DATA_BINARY}}
	}
	return []*databasev1.TagSpec{
		{Name: tagMessage, Type: databasev1.TagType_TAG_TYPE_STRING},
		{Name: tagLabels, Type: databasev1.TagType_TAG_TYPE_STRING_ARRAY},
		{Name: tagCodes, Type: databasev1.TagType_TAG_TYPE_INT_ARRAY},
		{Name: tagBlob, Type: databasev1.TagType_TAG_TYPE_DATA_BINARY},
	}
}

// dataTags are the data family's values in schema order, the same for
// every message of a run: payload is --payload-bytes of random bytes.
func dataTags(shape string, payload []byte) []*modelv1.TagValue {
	if shape != ShapeRealistic {
		return []*modelv1.TagValue{{Value: &modelv1.TagValue_BinaryData{BinaryData: payload}}}
	}
	// The message is text: the payload's bytes mapped to letters.
	msg := make([]byte, len(payload))
	for i, c := range payload {
		msg[i] = 'a' + c%26
	}
	blob := make([]byte, blobBytes)
	_, _ = rand.Read(blob)
	return []*modelv1.TagValue{
		{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: string(msg)}}},
		{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"env:prod", "zone:eu-1", "tier:web"}}}},
		{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{200, 404, 503}}}},
		{Value: &modelv1.TagValue_BinaryData{BinaryData: blob}},
	}
}

// entityTags are entity e's entity family values in schema order: the
// service and instance, and with the realistic shape an endpoint.
func (m *messages) entityTags(e int64) []*modelv1.TagValue {
	tags := []*modelv1.TagValue{
		{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "svc-" + strconv.FormatInt(e/instancesPerService, 10)}}},
		{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: e % instancesPerService}}},
	}
	if m.shape == ShapeRealistic {
		endpoint := "/api/v1/op-" + strconv.FormatInt(e%endpointsPerInstance, 10)
		tags = append(tags, &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: endpoint}}})
	}
	return tags
}

// writtenTags is entity e's entity family in the order the requests carry
// it: the schema's or, with the spec, the spec's alphabetical one.
func (m *messages) writtenTags(e int64) []*modelv1.TagValue {
	return m.inWrittenOrder(entityTagSpecs(m.shape), m.entityTags(e))
}

// inWrittenOrder orders values, given in the order of specs, as the
// requests carry them: unchanged or, with the spec, by tag name.
func (m *messages) inWrittenOrder(specs []*databasev1.TagSpec, values []*modelv1.TagValue) []*modelv1.TagValue {
	if !m.spec {
		return values
	}
	idx := make([]int, len(specs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(specs[a].GetName(), specs[b].GetName()) })
	out := make([]*modelv1.TagValue, len(values))
	for i, j := range idx {
		out[i] = values[j]
	}
	return out
}
