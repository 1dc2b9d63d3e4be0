package a2a

// SetFollowBuffer sets how far a followed task's subscription may fall
// behind, for tests that make followers fall behind; it returns the old
// value.
func SetFollowBuffer(n int) int {
	old := followBuffer
	followBuffer = n
	return old
}
