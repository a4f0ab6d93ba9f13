package route

import (
	"errors"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func TestShardID(t *testing.T) {
	// Published XXH64 (seed 0) vectors: "" -> ef46db3751d8e999, "abc" ->
	// 44bc2cf5ad770999. The rest hash hand-built keys with xxhash directly.
	key := hexBytes(3, "svc", 2, 2, "ab", 4, 0x80, 0, 0, 0, 0, 0, 0, 1)
	tests := []struct {
		name     string
		key      []byte
		shardNum uint32
		want     uint32
	}{
		{"empty key, 1 shard", nil, 1, 0},
		{"empty key, 7 shards", nil, 7, uint32(0xef46db3751d8e999 % 7)},
		{"abc, 2 shards", []byte("abc"), 2, uint32(0x44bc2cf5ad770999 % 2)},
		{"abc, 10 shards", []byte("abc"), 10, uint32(0x44bc2cf5ad770999 % 10)},
		{"abc, max shards", []byte("abc"), 1<<32 - 1, uint32(0x44bc2cf5ad770999 % (1<<32 - 1))},
		{"series key, 32 shards", key, 32, uint32(xxhash.Sum64(key) % 32)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ShardID(tt.key, tt.shardNum)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ShardID = %d, want %d", got, tt.want)
			}
		})
	}
	// The series key's encoding is what reaches the hash.
	enc, _ := AppendSeriesKey(nil, "svc", []EntityValue{StrValue("ab"), IntValue(1)})
	a, _ := ShardID(enc, 1000)
	b, _ := ShardID(key, 1000)
	if a != b {
		t.Fatalf("encoded key shards to %d, hand-built key to %d", a, b)
	}
}

func TestShardIDZeroShards(t *testing.T) {
	if _, err := ShardID([]byte("abc"), 0); !errors.Is(err, ErrInvalidShardNum) {
		t.Fatalf("err = %v, want ErrInvalidShardNum", err)
	}
}
