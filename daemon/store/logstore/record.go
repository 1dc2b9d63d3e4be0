package logstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strconv"

	"github.com/mailroom/mailroom/daemon/store/internal/replay"
	"github.com/mailroom/mailroom/mailbox"
)

// A record is one line of a log segment:
//
//	{"seq":12,"crc":3735928559,"event":{...}}\n
//
// The CRC-32C covers the event's bytes exactly as written. seq sits outside
// the event so that recovery can check continuity without decoding events,
// and a reader checks that the event's own seq agrees with it. The frame is
// fixed and its numbers canonical, so a record's bytes are a pure function of
// its event: any single changed byte breaks the frame, the checksum or the
// seq sequence, and a torn record can never pass for a whole one.
//
// A snapshot file holds exactly one record keyed "snapshot".
const (
	keyEvent    = "event"
	keySnapshot = "snapshot"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends the record of body (JSON) at seq under key to dst.
func appendRecord(dst []byte, key string, seq uint64, body []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"crc":`...)
	dst = strconv.AppendUint(dst, uint64(crc32.Checksum(body, castagnoli)), 10)
	dst = append(dst, `,"`...)
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	dst = append(dst, body...)
	return append(dst, "}\n"...)
}

// encodeEvent returns ev's record: replay.Body (which refuses a body
// replay could not read back) in the record frame.
func encodeEvent(ev mailbox.Event) ([]byte, error) {
	body, err := replay.Body(ev)
	if err != nil {
		return nil, err
	}
	return appendRecord(make([]byte, 0, len(body)+48), keyEvent, ev.Seq, body), nil
}

// encodeSnapshot returns the bytes of snap's snapshot file.
func encodeSnapshot(snap *mailbox.Snapshot) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := writeSnapshotRecord(&buf, snap); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeSnapshotRecord writes snap's snapshot file to w, the very bytes
// appendRecord would frame json.Marshal(snap) in, without holding them:
// the body is written a task at a time, twice, first to learn the
// checksum the frame puts before it, then to w. A million live tasks'
// snapshot is 500 MB, and marshalling it whole held it three times over
// (the encoder's buffer, Marshal's copy, the frame's), most of a
// compaction's peak of 4.4 GB (issue 27). It returns the bytes written.
func writeSnapshotRecord(w io.Writer, snap *mailbox.Snapshot) (int64, error) {
	head, tail, err := snapshotFrame(snap)
	if err != nil {
		return 0, err
	}
	sum := crc32.New(castagnoli)
	if err := writeSnapshotBody(sum, snap, head, tail); err != nil {
		return 0, err
	}
	crc := sum.Sum32()
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countingWriter{w: bw}
	var prefix []byte
	prefix = append(prefix, `{"seq":`...)
	prefix = strconv.AppendUint(prefix, snap.Seq, 10)
	prefix = append(prefix, `,"crc":`...)
	prefix = strconv.AppendUint(prefix, uint64(crc), 10)
	prefix = append(prefix, `,"`+keySnapshot+`":`...)
	if _, err := cw.Write(prefix); err != nil {
		return cw.n, err
	}
	again := crc32.New(castagnoli)
	if err := writeSnapshotBody(io.MultiWriter(cw, again), snap, head, tail); err != nil {
		return cw.n, err
	}
	if again.Sum32() != crc {
		// The snapshot changed between the two passes: a bug, never a
		// file whose checksum does not hold.
		return cw.n, errors.New("the snapshot's bytes changed between its two encodings")
	}
	if _, err := cw.Write([]byte("}\n")); err != nil {
		return cw.n, err
	}
	return cw.n, bw.Flush()
}

// snapshotFrame marshals snap without its tasks and returns what comes
// before the tasks' elements and what comes after them. Tasks is the
// third field, after two numbers, so its key is the first "tasks" in the
// bytes whatever the later fields hold.
func snapshotFrame(snap *mailbox.Snapshot) (head, tail []byte, err error) {
	bare := *snap
	bare.Tasks = []mailbox.TaskRecord{}
	b, err := json.Marshal(&bare)
	if err != nil {
		return nil, nil, err
	}
	const key = `"tasks":[]`
	i := bytes.Index(b, []byte(key))
	if i < 0 || !bytes.HasPrefix(b, []byte(`{"seq":`)) {
		return nil, nil, errors.New("a snapshot without tasks does not encode as expected")
	}
	i += len(key) - 1
	return b[:i], b[i:], nil
}

// writeSnapshotBody writes json.Marshal(snap)'s bytes to w: head, each
// task as encoding/json writes a slice's elements, tail.
func writeSnapshotBody(w io.Writer, snap *mailbox.Snapshot, head, tail []byte) error {
	if _, err := w.Write(head); err != nil {
		return err
	}
	for i := range snap.Tasks {
		b, err := json.Marshal(&snap.Tasks[i])
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := w.Write([]byte{','}); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err := w.Write(tail)
	return err
}

// countingWriter counts what it writes on.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// parseRecord checks one line (without its newline) and returns its seq and
// the checksummed body.
func parseRecord(line []byte, key string) (uint64, []byte, error) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return 0, nil, errors.New(`not a record: it lacks the {"seq": prefix every record starts with`)
	}
	seq, rest, ok := cutUint(rest)
	if !ok {
		return 0, nil, errors.New("not a record: seq is not a plain number")
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"crc":`)); !ok {
		return 0, nil, errors.New(`not a record: "crc" does not follow seq`)
	}
	crc, rest, ok := cutUint(rest)
	if !ok || crc > math.MaxUint32 {
		return 0, nil, errors.New("not a record: crc is not a 32-bit number")
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"`+key+`":`)); !ok {
		return 0, nil, fmt.Errorf("not a record: %q does not follow crc", key)
	}
	body, ok := bytes.CutSuffix(rest, []byte("}"))
	if !ok || len(body) == 0 {
		return 0, nil, fmt.Errorf("not a record: the %s is missing or not closed", key)
	}
	if got := crc32.Checksum(body, castagnoli); got != uint32(crc) {
		return 0, nil, fmt.Errorf("checksum mismatch: the record says %d, its %s bytes give %d", crc, key, got)
	}
	return seq, body, nil
}

// cutUint reads a canonical decimal (no sign, no leading zero) off b.
func cutUint(b []byte) (uint64, []byte, bool) {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && b[0] == '0') {
		return 0, nil, false
	}
	v, err := strconv.ParseUint(string(b[:n]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return v, b[n:], true
}

// unitOf returns the size of the unit an event's body begins ("unit", right
// after "type", as mailbox.Event encodes it), or 0 when it begins none.
// Recovery reads it for every record without decoding the event.
func unitOf(body []byte) int {
	const typeKey = `"type":"`
	i := bytes.Index(body, []byte(typeKey))
	if i < 0 {
		return 0
	}
	rest := body[i+len(typeKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0
	}
	rest, ok := bytes.CutPrefix(rest[j+1:], []byte(`,"unit":`))
	if !ok {
		return 0
	}
	n, _, ok := cutUint(rest)
	if !ok || n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// decodeEvent decodes a record body logged at seq (replay.Decode).
func decodeEvent(seq uint64, body []byte) (mailbox.Event, error) {
	return replay.Decode(seq, body)
}
