package route

import "errors"

// Sentinel errors. Callers branch on these with errors.Is; wrapped errors
// add the offending group, node or byte offset.
var (
	// ErrUnknownGroup: the table was built without this group (the schema
	// has not reached this liaison yet, or the group was deleted).
	ErrUnknownGroup = errors.New("route: unknown group")
	// ErrNoNodes: the table has no live data node to place a shard on.
	ErrNoNodes = errors.New("route: no live data nodes")
	// ErrShardOutOfRange: the shard id is not below the group's shard count.
	ErrShardOutOfRange = errors.New("route: shard out of range")
	// ErrInvalidShardNum: a shard count of 0 cannot place anything.
	ErrInvalidShardNum = errors.New("route: shard count must be at least 1")
	// ErrInvalidNode: a node has an empty or duplicate name.
	ErrInvalidNode = errors.New("route: invalid node")
	// ErrInvalidGroup: a group has an empty or duplicate name or no shards.
	ErrInvalidGroup = errors.New("route: invalid group")
	// ErrInvalidKind: an EntityValue carries a Kind this package does not know,
	// most often the zero Kind left by a converter that forgot to set it.
	ErrInvalidKind = errors.New("route: invalid entity value kind")
	// ErrMalformedKey: DecodeSeriesKey was given bytes no encoder produces.
	ErrMalformedKey = errors.New("route: malformed series key")
)
