package route

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func hexBytes(parts ...any) []byte {
	var out []byte
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			out = append(out, byte(v))
		case string:
			out = append(out, v...)
		case []byte:
			out = append(out, v...)
		default:
			panic(fmt.Sprintf("hexBytes: %T", p))
		}
	}
	return out
}

// TestAppendSeriesKeyGolden pins the byte layout: it feeds the shard hash,
// so any change here re-shards every series in a running cluster.
func TestAppendSeriesKeyGolden(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), 200))
	name128 := string(bytes.Repeat([]byte("n"), 128))
	tests := []struct {
		name   string
		series string
		values []EntityValue
		want   []byte
	}{
		{"name only", "svc", nil, hexBytes(3, "svc")},
		{"empty name, null", "", []EntityValue{NullValue()}, hexBytes(0, 1)},
		{"str and int", "svc", []EntityValue{StrValue("ab"), IntValue(1)},
			hexBytes(3, "svc", 2, 2, "ab", 4, 0x80, 0, 0, 0, 0, 0, 0, 1)},
		{"int zero", "m", []EntityValue{IntValue(0)}, hexBytes(1, "m", 4, 0x80, 0, 0, 0, 0, 0, 0, 0)},
		{"int -1", "m", []EntityValue{IntValue(-1)},
			hexBytes(1, "m", 4, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
		{"int min", "m", []EntityValue{IntValue(math.MinInt64)}, hexBytes(1, "m", 4, 0, 0, 0, 0, 0, 0, 0, 0)},
		{"int max", "m", []EntityValue{IntValue(math.MaxInt64)},
			hexBytes(1, "m", 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
		{"str array", "m", []EntityValue{StrArrayValue("a", "bc")}, hexBytes(1, "m", 3, 2, 1, "a", 2, "bc")},
		{"int array", "m", []EntityValue{IntArrayValue(1, -2)},
			hexBytes(1, "m", 5, 2, 0x80, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe)},
		{"binary", "m", []EntityValue{BytesValue([]byte{0, 0xff})}, hexBytes(1, "m", 6, 2, 0, 0xff)},
		// 1s + 5ns = 1_000_000_005 ns = 0x3b9aca05
		{"timestamp", "m", []EntityValue{TimestampValue(time.Unix(1, 5))},
			hexBytes(1, "m", 7, 0x80, 0, 0, 0, 0x3b, 0x9a, 0xca, 0x05)},
		{"empty values", "m", []EntityValue{StrValue(""), StrArrayValue(), IntArrayValue(), BytesValue(nil)},
			hexBytes(1, "m", 2, 0, 3, 0, 5, 0, 6, 0)},
		// 200 = 0b1_1001000 -> uvarint c8 01
		{"two-byte length", "m", []EntityValue{StrValue(long)}, hexBytes(1, "m", 2, 0xc8, 1, long)},
		{"two-byte name length", name128, nil, hexBytes(0x80, 1, name128)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendSeriesKey(nil, tt.series, tt.values)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("key = % x\nwant  % x", got, tt.want)
			}
			// The incremental API writes the same bytes after a prefix.
			inc := AppendSeriesName([]byte("prefix"), tt.series)
			for _, v := range tt.values {
				if inc, err = AppendEntityValue(inc, v); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(inc, append([]byte("prefix"), tt.want...)) {
				t.Fatalf("incremental key = % x", inc)
			}
			name, values, err := DecodeSeriesKey(got)
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.series || !reflect.DeepEqual(values, normalize(tt.values)) {
				t.Fatalf("decoded %q %#v", name, values)
			}
		})
	}
}

// TestSeriesKeyDistinct lists inputs a careless encoding would confuse.
func TestSeriesKeyDistinct(t *testing.T) {
	type input struct {
		name   string
		values []EntityValue
	}
	pairs := []struct {
		what string
		a, b input
	}{
		{"split point", input{"m", []EntityValue{StrValue("ab"), StrValue("c")}}, input{"m", []EntityValue{StrValue("a"), StrValue("bc")}}},
		{"name vs value", input{"ab", nil}, input{"a", []EntityValue{StrValue("b")}}},
		{"str vs int", input{"m", []EntityValue{StrValue("1")}}, input{"m", []EntityValue{IntValue(1)}}},
		{"empty str vs null", input{"m", []EntityValue{StrValue("")}}, input{"m", []EntityValue{NullValue()}}},
		{"empty array vs null", input{"m", []EntityValue{StrArrayValue()}}, input{"m", []EntityValue{NullValue()}}},
		{"array vs values", input{"m", []EntityValue{StrArrayValue("a", "b")}}, input{"m", []EntityValue{StrValue("a"), StrValue("b")}}},
		{"array split", input{"m", []EntityValue{StrArrayValue("ab")}}, input{"m", []EntityValue{StrArrayValue("a", "b")}}},
		{"int array vs ints", input{"m", []EntityValue{IntArrayValue(1, 2)}}, input{"m", []EntityValue{IntValue(1), IntValue(2)}}},
		{"binary vs str", input{"m", []EntityValue{BytesValue([]byte("x"))}}, input{"m", []EntityValue{StrValue("x")}}},
		{"int vs timestamp", input{"m", []EntityValue{IntValue(5)}}, input{"m", []EntityValue{{Kind: KindTimestamp, Int: 5}}}},
		{"null count", input{"m", []EntityValue{NullValue()}}, input{"m", []EntityValue{NullValue(), NullValue()}}},
	}
	for _, p := range pairs {
		ka, err := AppendSeriesKey(nil, p.a.name, p.a.values)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := AppendSeriesKey(nil, p.b.name, p.b.values)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(ka, kb) {
			t.Errorf("%s: both encode to % x", p.what, ka)
		}
	}
}

func TestAppendSeriesKeyInvalidKind(t *testing.T) {
	for _, v := range []EntityValue{{}, {Kind: 8, Str: "x"}, {Kind: 255}} {
		dst := []byte("keep")
		got, err := AppendSeriesKey(dst, "m", []EntityValue{StrValue("a"), v})
		if !errors.Is(err, ErrInvalidKind) {
			t.Fatalf("kind %v: err = %v, want ErrInvalidKind", v.Kind, err)
		}
		if string(got) != "keep" {
			t.Fatalf("kind %v: dst = %q, want it unchanged", v.Kind, got)
		}
	}
}

func TestDecodeSeriesKeyMalformed(t *testing.T) {
	tests := []struct {
		name string
		key  []byte
	}{
		{"empty", nil},
		{"name longer than key", hexBytes(5, "ab")},
		{"non-minimal name length", hexBytes(0x81, 0, "a")},
		{"overflowing varint", hexBytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1)},
		{"invalid kind 0", hexBytes(1, "m", 0)},
		{"unknown kind 8", hexBytes(1, "m", 8)},
		{"truncated int", hexBytes(1, "m", 4, 0x80, 0, 0)},
		{"truncated str", hexBytes(1, "m", 2, 3, "ab")},
		{"missing str length", hexBytes(1, "m", 2)},
		{"non-minimal str length", hexBytes(1, "m", 2, 0x80, 0)},
		{"str array count too big", hexBytes(1, "m", 3, 3, 0, 0)},
		{"int array count too big", hexBytes(1, "m", 5, 2, 0x80, 0, 0, 0, 0, 0, 0, 1)},
		{"huge array count", hexBytes(1, "m", 3, 0xff, 0xff, 0xff, 0xff, 0x0f)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := DecodeSeriesKey(tt.key); !errors.Is(err, ErrMalformedKey) {
				t.Fatalf("err = %v, want ErrMalformedKey", err)
			}
		})
	}
}

// TestSeriesKeyInjective encodes many random inputs drawn from a tiny
// alphabet, so near-collisions are common, and checks that equal keys only
// ever come from equal inputs and that every key decodes to its input.
func TestSeriesKeyInjective(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	seen := make(map[string]string)
	dupInputs := 0
	for range 50000 {
		name, values := randomSeries(rng)
		key, err := AppendSeriesKey(nil, name, values)
		if err != nil {
			t.Fatal(err)
		}
		canon := fmt.Sprintf("%q %#v", name, normalize(values))
		if prev, ok := seen[string(key)]; ok {
			if prev != canon {
				t.Fatalf("collision on % x:\n%s\n%s", key, prev, canon)
			}
			dupInputs++
		}
		seen[string(key)] = canon
		gotName, gotValues, err := DecodeSeriesKey(key)
		if err != nil {
			t.Fatalf("decode % x: %v", key, err)
		}
		if gotName != name || !reflect.DeepEqual(gotValues, normalize(values)) {
			t.Fatalf("round trip of %s gave %q %#v", canon, gotName, gotValues)
		}
	}
	t.Logf("%d distinct keys, %d repeated inputs", len(seen), dupInputs)
}

func TestAppendSeriesKeyNoAlloc(t *testing.T) {
	values := []EntityValue{StrValue("service-a"), StrValue("instance-1"), IntValue(42), StrArrayValue("x", "y")}
	dst := make([]byte, 0, 128)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = AppendSeriesKey(dst[:0], "service_cpm", values); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("AppendSeriesKey into a reused buffer allocated %v times per call", allocs)
	}
}

func FuzzSeriesKey(f *testing.F) {
	for _, seed := range [][]byte{
		hexBytes(3, "svc", 2, 2, "ab", 4, 0x80, 0, 0, 0, 0, 0, 0, 1),
		hexBytes(1, "m", 3, 2, 1, "a", 2, "bc", 5, 1, 0, 0, 0, 0, 0, 0, 0, 0),
		hexBytes(1, "m", 1, 6, 2, 0, 0xff, 7, 0x80, 0, 0, 0, 0x3b, 0x9a, 0xca, 0x05),
		hexBytes(0x81, 0, "a"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		name, values, err := DecodeSeriesKey(key)
		if err != nil {
			if !errors.Is(err, ErrMalformedKey) {
				t.Fatalf("decode error %v does not wrap ErrMalformedKey", err)
			}
			return
		}
		// Canonical: the key the decoded input encodes to is this key, so no
		// second input can encode to it either (encoding is injective).
		again, err := AppendSeriesKey(nil, name, values)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, key) {
			t.Fatalf("decode then encode changed the key:\n% x\n% x", key, again)
		}
	})
}

func FuzzSeriesKeyRoundTrip(f *testing.F) {
	f.Add("svc", "ab", int64(1), []byte{0, 1}, uint16(0x1234))
	f.Add("", "", int64(-1), []byte(nil), uint16(0))
	f.Fuzz(func(t *testing.T, name, s string, i int64, b []byte, shape uint16) {
		// shape picks up to five values, three bits each, from the inputs.
		var values []EntityValue
		for k := 0; k < 5 && shape != 0; k++ {
			switch shape & 7 {
			case 1:
				values = append(values, NullValue())
			case 2:
				values = append(values, StrValue(s))
			case 3:
				values = append(values, StrArrayValue(s, name))
			case 4:
				values = append(values, IntValue(i))
			case 5:
				values = append(values, IntArrayValue(i, -i))
			case 6:
				values = append(values, BytesValue(b))
			case 7:
				values = append(values, EntityValue{Kind: KindTimestamp, Int: i})
			}
			shape >>= 3
		}
		key, err := AppendSeriesKey(nil, name, values)
		if err != nil {
			t.Fatal(err)
		}
		gotName, gotValues, err := DecodeSeriesKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if gotName != name || !reflect.DeepEqual(gotValues, normalize(values)) {
			t.Fatalf("round trip of %q %#v gave %q %#v", name, values, gotName, gotValues)
		}
	})
}

// normalize returns values as DecodeSeriesKey produces them: only the field
// Kind names is set, and empty slices are nil.
func normalize(values []EntityValue) []EntityValue {
	var out []EntityValue
	for _, v := range values {
		n := EntityValue{Kind: v.Kind}
		switch v.Kind {
		case KindStr:
			n.Str = v.Str
		case KindInt, KindTimestamp:
			n.Int = v.Int
		case KindStrArray:
			if len(v.Strs) > 0 {
				n.Strs = append([]string(nil), v.Strs...)
			}
		case KindIntArray:
			if len(v.Ints) > 0 {
				n.Ints = append([]int64(nil), v.Ints...)
			}
		case KindBytes:
			if len(v.Bytes) > 0 {
				n.Bytes = append([]byte(nil), v.Bytes...)
			}
		}
		out = append(out, n)
	}
	return out
}

// randomSeries draws from a two-letter alphabet and small ints so distinct
// inputs often share bytes, the case an ambiguous encoding would get wrong.
func randomSeries(rng *rand.Rand) (string, []EntityValue) {
	str := func() string {
		b := make([]byte, rng.IntN(3))
		for i := range b {
			b[i] = "ab"[rng.IntN(2)]
		}
		return string(b)
	}
	values := make([]EntityValue, rng.IntN(4))
	for i := range values {
		switch ValueKind(1 + rng.IntN(7)) {
		case KindNull:
			values[i] = NullValue()
		case KindStr:
			values[i] = StrValue(str())
		case KindStrArray:
			ss := make([]string, rng.IntN(3))
			for j := range ss {
				ss[j] = str()
			}
			values[i] = StrArrayValue(ss...)
		case KindInt:
			values[i] = IntValue(int64(rng.IntN(3) - 1))
		case KindIntArray:
			is := make([]int64, rng.IntN(3))
			for j := range is {
				is[j] = int64(rng.IntN(2))
			}
			values[i] = IntArrayValue(is...)
		case KindBytes:
			values[i] = BytesValue([]byte(str()))
		case KindTimestamp:
			values[i] = EntityValue{Kind: KindTimestamp, Int: int64(rng.IntN(2))}
		}
	}
	return str(), values
}
