package a2a

// SetFollowBuffer sets how far a followed task's subscription may fall
// behind, for tests that make followers fall behind; it returns the old
// value.
func SetFollowBuffer(n int) int {
	old := followBuffer
	followBuffer = n
	return old
}

// HoldFollowers makes every follower call hold as it takes an event off
// its subscription, until the returned func undoes it.
func HoldFollowers(hold func()) (undo func()) {
	followHold = hold
	return func() { followHold = nil }
}
