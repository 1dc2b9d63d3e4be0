// Package store is the contract between the mailbox engine and a durable
// backend. Every backend runs the conformance suite in storetest.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// ErrCompacted is returned by EventsSince when events after the requested seq
// were folded into a snapshot and are no longer in the log.
var ErrCompacted = errors.New("store: events were compacted away")

// ErrClosed is returned (or passed to done) after Close.
var ErrClosed = errors.New("store: closed")

// Store keeps the mailbox's events durably.
//
// The engine calls Load once, then AppendUnit from under its own lock in
// seq order. The store owns one writer that writes a batch of appended
// units, syncs once, and then calls each unit's done callback, in seq order, from
// that one goroutine (group commit). The engine applies events to its
// committed state inside done, so done must be quick and must not call back
// into the store except through Stats.
type Store interface {
	// Load passes the durable state to fn in seq order: first the latest
	// snapshot as an event of type "snapshot" (when there is one), then every
	// durable event after it. A torn last record is cut off (and kept aside);
	// damage earlier is an error naming the record and its byte offset.
	// (CHANGED: Load used to return the snapshot after the events, which made
	// replay impossible without buffering every event.)
	Load(fn func(mailbox.Event) error) error

	// AppendUnit hands evs, consecutive seqs, to the writer as one unit
	// and returns at once; it never blocks on I/O. A single event is a
	// unit of one. The first seq must be one more than the previous
	// append's last (or the last durable seq after Load or Reset). The
	// events are written together and made durable together, and after a
	// crash the store holds all of them or none (Load cuts a unit it holds
	// only part of, as it cuts a torn record). With more than one event
	// the first must carry Unit = len(evs) and the rest none (a single
	// event's Unit is written as it is). done is called exactly once: nil when every
	// event is durable, or the error that means none will be. Once a write
	// fails, every unit appended until Reset fails too (they were decided
	// on top of the failed ones) and nothing of the failed batch remains
	// readable. The store enters that failed mode before it calls the
	// first failing done, and while failed, AppendUnit calls done(err)
	// itself before returning, so no event decided on top of a failed one
	// can still be queued when Reset runs. A unit with any other seq, or
	// an event the store refuses, refuses the whole unit: done gets an
	// error and nothing of it is written.
	AppendUnit(evs []mailbox.Event, done func(error))

	// Reset lets appends through again after a failed write. The next append
	// carries LastSeq()+1. It returns an error while the store still cannot
	// write.
	Reset() error

	// LastSeq is the seq of the last durable event (or of the snapshot when no
	// event follows it).
	LastSeq() uint64

	// EventsSince returns up to limit durable events with seq > after, in
	// order. It returns ErrCompacted when the first of them is no longer in
	// the log, and no events when after >= LastSeq() (the caller must tell
	// "nothing new" from "ahead of this log" itself). An event may be
	// returned as soon as it is durable, before its done has run.
	EventsSince(after uint64, limit int) ([]mailbox.Event, error)

	// Compact makes snapshot() the new base and drops the log before it.
	// snapshot is called by the writer between batches, when every appended
	// event so far is durable and its done callback has run, so the state it
	// returns is exactly the durable state. A crash at any point of Compact
	// loses nothing. The snapshot must share no memory the engine goes on
	// changing: the store may still be encoding it while later appends are
	// written. Concurrent calls run one after the other; while a failed
	// write has not been Reset, Compact fails.
	Compact(snapshot func() *mailbox.Snapshot) (mailbox.CompactOutcome, error)

	// Stats reports sizes and writer figures for metrics and for the
	// engine's automatic-compaction policy.
	Stats() Stats

	// Close writes and syncs everything appended so far, calls every
	// pending done, and releases the files. Appends after Close fail with
	// ErrClosed (passed to done before AppendUnit returns), and so do Load,
	// EventsSince, Compact and Reset; LastSeq and Stats keep answering.
	// Calling Close again returns the first call's result.
	Close() error
}

// Stats are a store's figures since it was opened.
type Stats struct {
	LastSeq uint64
	// LogBytes is the size of the log after the latest snapshot; SnapshotBytes
	// the size of that snapshot (0 without one). Their ratio drives automatic
	// compaction.
	LogBytes      int64
	SnapshotBytes int64
	// EventsAppended counts durable events; Batches counts syncs (group commits).
	EventsAppended uint64
	Batches        uint64
	WriteErrors    uint64
	Compactions    uint64
}

// ErrNotLeader is passed to done (and returned by Reset and Compact) by a
// shared store whose instance does not lead: nothing was written.
var ErrNotLeader = errors.New("this instance does not lead: another instance writes the shared log")

// Role is an instance's part in a shared store.
type Role struct {
	// Leader is true while this instance alone appends.
	Leader bool
	// Epoch is the newest term this instance has seen.
	Epoch int64
	// Holder names the leading instance, LeaderURL is where it is reached
	// (its advertise_url); both empty while nobody leads.
	Holder    string
	LeaderURL string
}

// Current is implemented by a shared store, whose instance can hold a
// view that another instance has overtaken (after a pause of its own: a
// long GC pause, a frozen VM, SIGSTOP). An answer made from the state is
// given only when the view it was made from was current.
type Current interface {
	// CurrentAt reports whether this instance's view is known current at
	// t: a leader's lead was confirmed by a round trip on its session that
	// started less than its lead lease before t (no other instance can
	// have taken over since); a follower read the table less than that
	// before t.
	CurrentAt(t time.Time) bool
	// Confirm makes the view current or says it cannot: a leader checks
	// on its session that its epoch still leads (and steps down when it
	// does not: ErrNotLeader); a follower reads to the table's head (what
	// that brought tells its caller whether an answer made before the call
	// missed anything).
	Confirm(ctx context.Context) error
}

// Shared is a store several daemons use at once. Exactly one instance
// leads at a time; only its AppendUnit writes, and the others are refused
// with ErrNotLeader.
type Shared interface {
	Store
	// Follow starts following after Load: apply gets, on one goroutine, in
	// seq order and once each, every durable event after seq after that
	// this instance did not append itself; role gets every change of
	// role, Leader only once apply has seen every event before the first
	// this instance may append. Both run on the store's writer goroutine
	// and must be quick, like done.
	Follow(after uint64, apply func(mailbox.Event) error, role func(Role))
	// Role is this instance's role now.
	Role() Role
}

// Standing is the optional capability of a shared store to say where this
// instance stands in it, for the status route (a daemon asks for it as
// river gates a driver's optional features: by interface, not by the
// store's type).
type Standing interface {
	// Role is this instance's role now.
	Role() Role
	// Advertise is the URL this instance is reached at, as it told the
	// others.
	Advertise() string
	// Behind is how many events the instance has heard of (the newest
	// seq announced) and not applied yet (0 for a leader).
	Behind() uint64
}
