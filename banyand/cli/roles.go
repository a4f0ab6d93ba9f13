package cli

import "github.com/banyand-io/banyand/banyand/roles"

func roleCommands() []roleCommand {
	return []roleCommand{
		{
			use:   "standalone",
			short: "Run liaison and storage in one process (no etcd needed)",
			long:  "standalone serves the BanyanDB-compatible client API and stores data locally:\nthe schema registry, the storage engine and the write path in one process.",
			role:  &roles.Standalone{},
		},
		{
			use:   "liaison",
			short: "Run the client-facing liaison of a cluster",
			long:  "liaison serves the BanyanDB-compatible client API, keeps the schema in etcd,\nroutes each write by shard to the data node that owns it and answers once it is durable.",
			role:  &roles.Liaison{},
		},
		{
			use:   "storage",
			short: "Run a data node of a cluster",
			long:  "storage serves the cluster protocol to liaisons, stores stream and measure data\nin its data directory and registers itself in etcd.",
			role:  &roles.Storage{},
		},
	}
}
