package logstore

import "testing"

// BenchmarkEncodeEvent is the CPU Append spends on the caller's goroutine
// (under the engine's lock) per event, without any I/O: the event encoded
// into its log line and decoded back as replay will read it.
//
//	go test -run '^$' -bench EncodeEvent ./daemon/store/logstore
func BenchmarkEncodeEvent(b *testing.B) {
	for _, ev := range sampleEvents() {
		b.Run(ev.Type, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeEvent(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
