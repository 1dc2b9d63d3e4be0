package outbound

// cardNotVerified records that the remote must serve a signed card
// (require_signed_card) and the card it served does not verify. It gets
// nothing more: its circuit opens at once (failed, called next, counts
// the last failure), not after FailuresToOpen tries, since the same card
// is served again until its operator fixes it; and it stays open,
// whatever the deliveries already under way hear, until a card that
// verifies is read (resolve clears it). Its state in the agents listing
// is circuit_open, the reason its last_error.
func (r *remote) cardNotVerified() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unverified = true
	r.failures = max(r.failures, r.d.o.FailuresToOpen-1)
}
