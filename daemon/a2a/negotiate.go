package a2a

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// answerType is the media type of a JSON answer to r, negotiated from its
// Accept header (RFC 9110 12.5.1): each of the two JSON types weighs the
// q of the most specific media range that matches it (application/json,
// application/*, */*), and the heavier one wins. When both weigh the same
// and more than nothing (no Accept, */*, application/*, or both named) the
// answer is in the type the request's body was sent as, else
// application/json. An Accept that allows neither (text/html, or
// text/event-stream on a stream refused before it starts) is answered
// application/json all the same rather than 406, as RFC 9110 permits:
// the client gets a refusal it can read instead of none, and a2a-go, which
// reads an error only as application/json, reads it.
func answerType(r *http.Request) string {
	qJSON, qA2A := 1.0, 1.0
	if accept := strings.Join(r.Header.Values("Accept"), ","); strings.TrimSpace(accept) != "" {
		qJSON, qA2A = acceptQ(accept, "application", "json"), acceptQ(accept, "application", "a2a+json")
	}
	switch {
	case qA2A > qJSON:
		return wire.ContentTypeA2A
	case qJSON > qA2A || qJSON == 0:
		return wire.ContentTypeJSON
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == wire.ContentTypeA2A {
		return wire.ContentTypeA2A
	}
	return wire.ContentTypeJSON
}

// acceptQ is the weight an Accept header gives the media type typ/sub: the
// q of the most specific range that matches it (an exact match over typ/*
// over */*), 0 when none does. A range that does not parse, or whose q is
// not a number from 0 to 1, is left out.
func acceptQ(accept, typ, sub string) float64 {
	q, best := 0.0, -1
	for part := range strings.SplitSeq(accept, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		t, s, ok := strings.Cut(mt, "/")
		if !ok {
			continue
		}
		spec := -1
		switch {
		case t == typ && s == sub:
			spec = 2
		case t == typ && s == "*":
			spec = 1
		case t == "*" && s == "*":
			spec = 0
		}
		if spec <= best {
			continue
		}
		w := 1.0
		if qs, ok := params["q"]; ok {
			f, err := strconv.ParseFloat(qs, 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			w = f
		}
		q, best = w, spec
	}
	return q
}

// writeAnswer writes v as the JSON answer to r, in the media type r
// accepts (answerType).
func writeAnswer(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Add("Vary", "Accept")
	writeJSONAs(w, status, answerType(r), v)
}
