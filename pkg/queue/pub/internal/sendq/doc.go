// Package sendq is the publisher's per-node send queue: the lanes
// publishers append to, the batches the send loops take whole, the
// node's byte budget, the windows of batches in flight, and the message
// memory, allocated in slabs and reused.
//
// The API follows a message through: Push queues it (or returns the
// channel to wait on while the budget is full), Take moves a batch into
// flight on a stream's Window, Landed takes it out when its ack comes,
// and Acked or Failed settle it. Expire fails what is past its deadline,
// Drain takes everything queued off a node that is going away, and
// Requeue puts a broken stream's batches back at the front.
//
// # Batching rules
//
// A lane holds a list of batches per topic; a message joins the newest
// batch of its topic in its owner's lane while the batch caps allow.
// Take holds a small batch (under a quarter of the caps) while the
// window's latest batch in flight is small too, so that moderate load
// sends fewer, fuller frames, and folds the other lanes' oldest batches
// of the same topic into the one it takes while the caps allow.
//
// # Clean and dirty batches
//
// A message pushed fresh (made by Push, its future not yet handed out)
// becomes one of its batch's own: its future holds the batch's outcome.
// A batch is clean while every message in it is its own and none of them
// was settled or moved on its own; it is dirty once
//
//   - a message joins that is not fresh (requeued, re-placed, a replica
//     copy or a broadcast request), or has no owner;
//   - a message of it is settled on its own (deadline, failure) or
//     dropped from it;
//   - it has more owners than it counts (four), or absorbs a dirty batch.
//
// Dirty never becomes clean again. The invariant: an outcome is acked
// only for a clean batch, out of flight, whose ack succeeded for every
// message before the earliest deadline in it; then one store settles all
// its own messages, and nothing else can ever settle them, since a
// message leaves a batch only from a dirty or discarded one, whose
// outcome is never set. So an acked outcome is the final word on its
// messages, and that is what makes reuse safe: only the messages of such
// a batch go back to their lane for new messages. A future reads its
// outcome first and last (see Msg.Wait), so a future whose message
// memory was reused still answers for its own message. A message settled
// on its own is never reused: its state is the answer its future reads.
package sendq
