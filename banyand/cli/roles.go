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
	}
}
