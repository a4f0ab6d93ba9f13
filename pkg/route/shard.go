package route

import "github.com/cespare/xxhash/v2"

// ShardID returns the shard of a series: xxhash64(seriesKey) mod shardNum.
//
// A shard count of 0 returns ErrInvalidShardNum instead of panicking on the
// modulo: the count comes from a group definition in the registry, and a bad
// definition must fail one write, not the liaison. Table validates counts at
// build time, so Table.Locate never hits this error.
func ShardID(seriesKey []byte, shardNum uint32) (uint32, error) {
	if shardNum == 0 {
		return 0, ErrInvalidShardNum
	}
	return uint32(xxhash.Sum64(seriesKey) % uint64(shardNum)), nil
}
