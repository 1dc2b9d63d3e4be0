package client

import "time"

// ConnState is the event stream's connection state, for display: live, or
// reconnecting with the attempt number and the last error.
type ConnState struct {
	Live    bool
	Attempt int // reconnect attempts since the stream was last live; 0 when live
	Err     error
	// LastSeq is the seq of the last event delivered to the caller.
	LastSeq uint64
	Since   time.Time
}
