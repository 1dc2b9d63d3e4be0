package pgstore

import (
	"strings"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	if err := checkVersion(130012); err == nil || !strings.Contains(err.Error(), "PostgreSQL 13.12, expected 14 or newer") {
		t.Errorf("13.12: %v", err)
	}
	for _, ok := range []int{140000, 150020, 170002} {
		if err := checkVersion(ok); err != nil {
			t.Errorf("%d: %v", ok, err)
		}
	}
}
