// Package replay is the replay decoder: how every backend reads an event
// body back, and the check that every body it stores can be read so. It
// alone uses goccy/go-json, where its speed-up was measured.
package replay

import (
	"encoding/json"
	"fmt"

	gojson "github.com/goccy/go-json"

	"github.com/mailroom/mailroom/mailbox"
)

// Body returns the JSON a backend stores for ev: ev.Encoded when its
// producer made it (the engine does, once for the log and every
// subscriber), or ev encoded here. The body is decoded back with the
// decoder replay uses before it is accepted: replay must never be the first
// to find that a value cannot be read (encoding/json writes values nested
// deeper than either decoder reads, for one), because by then the daemon
// cannot start. Every backend refuses an event whose body fails this.
func Body(ev mailbox.Event) ([]byte, error) {
	body := ev.Encoded
	if len(body) == 0 {
		var err error
		if body, err = json.Marshal(ev); err != nil {
			return nil, err
		}
	}
	if _, err := Decode(ev.Seq, body); err != nil {
		return nil, fmt.Errorf("it encodes, but replay could not read it back: %w", err)
	}
	return body, nil
}

// Decode decodes an event body stored at seq. Replay spends most of a
// restart here, so it uses goccy/go-json, which decodes these bodies about
// twice as fast as encoding/json; logstore's FuzzDecodeMatchesStdlib holds
// it to the standard library's result.
func Decode(seq uint64, body []byte) (mailbox.Event, error) {
	var ev mailbox.Event
	if err := gojson.Unmarshal(body, &ev); err != nil {
		return mailbox.Event{}, err
	}
	if ev.Seq != seq {
		return mailbox.Event{}, fmt.Errorf("the event inside says seq %d, its record says %d", ev.Seq, seq)
	}
	return ev, nil
}

// DecodeSnapshot decodes a snapshot body into snap. A restart over a
// large mailbox spends most of its time here (a million live tasks: a
// 500 MB snapshot, 6.7 s with encoding/json), so it uses goccy/go-json as
// Decode does. A snapshot is written by encoding/json and nests the
// events' values a few levels deeper than their own bodies, which were
// checked against this decoder (Body); should goccy refuse one all the
// same, encoding/json decodes it: a snapshot the daemon wrote must never
// keep it from starting.
func DecodeSnapshot(body []byte, snap *mailbox.Snapshot) error {
	if err := gojson.Unmarshal(body, snap); err == nil {
		return nil
	}
	*snap = mailbox.Snapshot{}
	return json.Unmarshal(body, snap)
}
