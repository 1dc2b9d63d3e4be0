// Package mailbox is Mailroom's domain: the entities (tasks, results,
// leases, repairs, agents' cards), the events that change them, the State
// that events are applied to (the one projection every side replays: the
// daemon, its followers and every console), the Decide* functions that
// check a request against a state and return the event that carries it
// out, the Service interface every edge calls, and the one error type with
// its code-to-status table. It imports nothing of Mailroom's but leaf
// libraries (internal/strictjson), so every other package may import it.
package mailbox
