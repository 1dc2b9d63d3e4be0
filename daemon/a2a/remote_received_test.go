package a2a

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
		{"connection refused", &RemoteError{Kind: RemoteTransport, cause: dial}, false},
		{"503", &RemoteError{Kind: RemoteTransport, HTTPStatus: 503}, false},
		{"429", &RemoteError{Kind: RemoteTransport, HTTPStatus: 429}, false},
		{"timed out", &RemoteError{Kind: RemoteTransport, cause: context.DeadlineExceeded}, true},
		{"reset before the answer", &RemoteError{Kind: RemoteTransport, cause: read}, true},
		{"500", &RemoteError{Kind: RemoteTransport, HTTPStatus: 500}, true},
		{"504", &RemoteError{Kind: RemoteTransport, HTTPStatus: 504}, true},
	} {
		if got := RemoteMayHaveReceived(c.err); got != c.want {
			t.Errorf("RemoteMayHaveReceived(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
