// Package schema is what every role knows of the schema: a lock-free
// cache of the groups, streams and measures that follows the registry,
// and the rules of BanyanDB's schema both the liaison and the data nodes
// apply (interval units, entity values of decoded tags, default query
// limits). Roles import it; it imports no role.
package schema
