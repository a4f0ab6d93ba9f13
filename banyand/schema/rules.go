package schema

import (
	"errors"
	"fmt"
	"time"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/pkg/route"
)

// Default limits when a query's limit is 0, as in BanyanDB v0.10
// (pkg/query/logical/{stream,measure}: defaultLimit).
const (
	DefaultStreamLimit  = 20
	DefaultMeasureLimit = 100
)

// MaxQueryWindow bounds a stream or measure query's offset + limit: every
// data node asked returns up to that many results and the liaison merges
// them, so a query asking for billions of rows would hold them all in
// memory. SkyWalking OAP asks for at most 10,000 (its resultWindowMaxSize).
const MaxQueryWindow = 100_000

// CheckQueryWindow refuses an offset and limit beyond MaxQueryWindow.
func CheckQueryWindow(offset, limit uint32) error {
	if w := uint64(offset) + uint64(limit); w > MaxQueryWindow {
		return fmt.Errorf("offset %d + limit %d = %d results: at most %d a query; page with a narrower time range", offset, limit, w, MaxQueryWindow)
	}
	return nil
}

// IntervalDuration converts a group's segment_interval or ttl to a
// duration; ok is false for a missing or unspecified rule.
func IntervalDuration(r *commonv1.IntervalRule) (d time.Duration, ok bool) {
	if r == nil || r.GetNum() == 0 {
		return 0, false
	}
	switch r.GetUnit() {
	case commonv1.IntervalRule_UNIT_HOUR:
		return time.Duration(r.GetNum()) * time.Hour, true
	case commonv1.IntervalRule_UNIT_DAY:
		return time.Duration(r.GetNum()) * 24 * time.Hour, true
	default:
		return 0, false
	}
}

// ErrNoValue: a tag value with no member of its oneof set.
var ErrNoValue = errors.New("tag value has no value")

// EntityValue converts a decoded tag value to its series-key form. The
// liaison converts wire-level values the same way, so the keys writes are
// routed by and the keys queries seek by agree.
func EntityValue(v *modelv1.TagValue) (route.EntityValue, error) {
	switch x := v.GetValue().(type) {
	case *modelv1.TagValue_Null:
		return route.NullValue(), nil
	case *modelv1.TagValue_Str:
		return route.StrValue(x.Str.GetValue()), nil
	case *modelv1.TagValue_Int:
		return route.IntValue(x.Int.GetValue()), nil
	case *modelv1.TagValue_StrArray:
		return route.StrArrayValue(x.StrArray.GetValue()...), nil
	case *modelv1.TagValue_IntArray:
		return route.IntArrayValue(x.IntArray.GetValue()...), nil
	case *modelv1.TagValue_BinaryData:
		return route.BytesValue(x.BinaryData), nil
	case *modelv1.TagValue_Timestamp:
		return route.TimestampValue(x.Timestamp.AsTime()), nil
	}
	return route.EntityValue{}, ErrNoValue
}
