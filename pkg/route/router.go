package route

import (
	"sync"
	"sync/atomic"
)

// Router holds the current placement Table. Lookups load it with one atomic
// read and take no lock; Update builds the next table and swaps it in, so a
// lookup sees either the old table or the new one, never a mix.
type Router struct {
	cur atomic.Pointer[Table]
	// mu serializes updaters only, so each table's version is exactly one
	// more than the last; readers never touch it.
	mu sync.Mutex
}

// NewRouter returns a Router holding an empty table of version 0: every
// lookup fails with ErrUnknownGroup until the first Update.
func NewRouter() *Router {
	r := &Router{}
	r.cur.Store(&Table{groups: map[string]*groupTable{}})
	return r
}

// Current returns the table in force. Callers that make several lookups for
// one write should call it once and use the table, so all lookups agree.
func (r *Router) Current() *Table { return r.cur.Load() }

// Update builds a table for nodes and groups with the next version and swaps
// it in. On error the current table stays in force and is returned alongside.
func (r *Router) Update(nodes []Node, groups []Group) (*Table, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.cur.Load()
	next, err := NewTable(cur.version+1, nodes, groups)
	if err != nil {
		return cur, err
	}
	r.cur.Store(next)
	return next, nil
}
