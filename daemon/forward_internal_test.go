package daemon

import (
	"net/http/httptest"
	"testing"
)

// Only the leader may serve a request that writes, and Covenant's dialect
// leases and drains by GET: every request under /compat/covenant/ goes to
// the leader, while the native routes' plain reads stay on the follower.
func TestMustLead(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/compat/covenant/a2a/tasks/next", true},
		{"GET", "/compat/covenant/a2a/results/next", true},
		{"GET", "/compat/covenant/a2a/queue", true},
		{"POST", "/compat/covenant/a2a/tasks", true},
		{"GET", "/a2a/tasks/next", true},
		{"GET", "/a2a/queue", false},
		{"GET", "/a2a/tasks/recent", false},
		{"POST", "/a2a/tasks", true},
	} {
		if got := mustLead(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("mustLead(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}
