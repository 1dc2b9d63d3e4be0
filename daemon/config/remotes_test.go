package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestRemotesFromTheFile(t *testing.T) {
	doc := `remotes:
  - agent: coder@remote
    bearer: s3cret-bearer
  - agent: writer@remote
    header: X-Api-Key
    value: s3cret-key
`
	c, err := Parse(base(), []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []RemoteCredential{{Agent: "coder@remote", Bearer: "s3cret-bearer"}, {Agent: "writer@remote", Header: "X-Api-Key", Value: "s3cret-key"}}
	if fmt.Sprint(len(c.Remotes)) != "2" || c.Remotes[0] != want[0] || c.Remotes[1] != want[1] {
		t.Fatalf("Remotes = %d entries, want %d", len(c.Remotes), len(want))
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, shown := range []string{fmt.Sprint(c.Remotes), fmt.Sprintf("%+v", c.Remotes), fmt.Sprintf("%#v", c.Remotes)} {
		if strings.Contains(shown, "s3cret") {
			t.Errorf("printing the remotes shows a secret: %s", shown)
		}
	}
}

func TestRemotesRefused(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"no agent", "remotes:\n  - bearer: s3cret-x\n", []string{"line 2", "remotes[0].agent"}},
		{"bad agent", "remotes:\n  - agent: 'a b'\n    bearer: s3cret-x\n", []string{"remotes[0].agent"}},
		{"both kinds", "remotes:\n  - agent: a@r\n    bearer: s3cret-x\n    header: X-K\n    value: s3cret-y\n", []string{"remotes[0] (a@r)", "exactly one kind"}},
		{"none", "remotes:\n  - agent: a@r\n", []string{"no credential"}},
		{"header without value", "remotes:\n  - agent: a@r\n    header: X-K\n", []string{"value"}},
		{"bad header", "remotes:\n  - agent: a@r\n    header: 'X K'\n    value: s3cret-y\n", []string{"header name"}},
		{"twice", "remotes:\n  - agent: a@r\n    bearer: s3cret-x\n  - agent: a@r\n    bearer: s3cret-z\n", []string{"line 4", "remotes[1].agent", "remotes[0]"}},
		{"unknown key", "remotes:\n  - agent: a@r\n    baerer: s3cret-x\n", []string{`unknown key "baerer"`}},
		{"not a list", "remotes: s3cret-x\n", []string{"expected a list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(base(), []byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted %q", tc.doc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

func TestRemotesAreFileOnly(t *testing.T) {
	c := base()
	if err := Set(&c, "remotes", "x"); err == nil || !strings.Contains(err.Error(), "config file only") {
		t.Errorf("Set(remotes) = %v, want a refusal saying config file only", err)
	}
	if err := CheckEnv([]string{"MAILROOM_REMOTES=x"}); err == nil || !strings.Contains(err.Error(), "config file only") {
		t.Errorf("CheckEnv(MAILROOM_REMOTES) = %v, want a refusal saying config file only", err)
	}
}
