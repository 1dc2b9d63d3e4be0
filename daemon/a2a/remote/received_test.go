package remote

import (
	"context"
	"errors"
	"net"
	"testing"
)

func TestRemoteMayHaveReceived(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &Error{Kind: Transport, cause: dial}, false},
		{"503", &Error{Kind: Transport, HTTPStatus: 503}, false},
		{"429", &Error{Kind: Transport, HTTPStatus: 429}, false},
		{"timed out", &Error{Kind: Transport, cause: context.DeadlineExceeded}, true},
		{"reset before the answer", &Error{Kind: Transport, cause: read}, true},
		{"500", &Error{Kind: Transport, HTTPStatus: 500}, true},
		{"504", &Error{Kind: Transport, HTTPStatus: 504}, true},
	} {
		if got := MayHaveReceived(c.err); got != c.want {
			t.Errorf("RemoteMayHaveReceived(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
