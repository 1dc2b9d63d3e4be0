// Package faults holds the fault-injection suite: tests that run the real
// mailroom binary and break its world for real (kill -9 under load, a data
// directory that fills up) and then check that everything acknowledged
// survived and nothing unacknowledged appeared. It has no code of its own;
// run it with
//
//	go test -run Fault ./faults
//	go test -run Fault ./faults -fault.iterations 200 -fault.seed 42
//	go test -run RestartMillion ./faults -fault.restart-events 1000000 -v
package faults
