package mailbox

import (
	"fmt"
	"net/url"
	"strings"
)

// The checks of a push config and a sender's webhook as the log will hold
// them: the URL, the token and the authentication a receiver is sent.

// NormalizePushConfig checks a push config as the log will hold it (what
// depends on the daemon's configuration, such as the hosts a webhook may
// name, is checked by the daemon before this); field names the config.
func NormalizePushConfig(field, taskID string, c PushConfig) (PushConfig, error) {
	if c.ID == "" {
		c.ID = taskID
	}
	if err := cardText(field+".id", c.ID, MaxPushIDBytes, true, "the config's id"); err != nil {
		return c, err
	}
	if err := cardChars(field+".id", c.ID, false); err != nil {
		return c, err
	}
	if _, err := ParsePushURL(field+".url", c.URL); err != nil {
		return c, err
	}
	if err := secretValue(field+".token", c.Token, MaxPushTokenBytes, "the token the receiver checks"); err != nil {
		return c, err
	}
	if a := c.Authentication; a != nil {
		if len(a.Schemes) == 0 || len(a.Schemes) > MaxPushSchemes {
			return c, Invalidf(field+".authentication.schemes", "got %d schemes, expected 1 to %d, such as [\"Bearer\"]", len(a.Schemes), MaxPushSchemes)
		}
		for i, s := range a.Schemes {
			f := fmt.Sprintf("%s.authentication.schemes[%d]", field, i)
			if s == "" || len(s) > MaxPushSchemeBytes || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
				return c, Invalidf(f, "got %s, expected an HTTP authentication scheme such as \"Bearer\" (at most %d bytes, no spaces)", quote(s), MaxPushSchemeBytes)
			}
		}
		if err := secretValue(field+".authentication.credentials", a.Credentials, MaxPushCredentialsLen, "the credentials the daemon presents"); err != nil {
			return c, err
		}
		c.Authentication = &PushAuth{Schemes: append([]string(nil), a.Schemes...), Credentials: a.Credentials}
	}
	return c, nil
}

// ParsePushURL checks a webhook URL: absolute http or https, without
// credentials or a fragment, bounded.
func ParsePushURL(field, u string) (*url.URL, error) {
	switch {
	case u == "":
		return nil, Invalidf(field, "got \"\", expected the webhook's absolute http or https URL, such as https://hooks.example.com/a2a")
	case len(u) > MaxPushURLBytes:
		return nil, Invalidf(field, "got %d bytes, expected a URL of at most %d bytes", len(u), MaxPushURLBytes)
	}
	if err := cardChars(field, u, false); err != nil {
		return nil, err
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || p.Opaque != "" {
		return nil, Invalidf(field, "got %s, expected an absolute http or https URL such as https://hooks.example.com/a2a", quote(u))
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return nil, Invalidf(field, "got scheme %s, expected http or https", quote(p.Scheme))
	}
	if p.User != nil {
		return nil, Invalidf(field, "holds credentials (user:password@); expected a URL without them: put a token in the config's token or authentication")
	}
	if p.Fragment != "" || strings.Contains(u, "#") {
		return nil, Invalidf(field, "got a #fragment, expected a URL without one")
	}
	return p, nil
}

// secretValue checks a secret sent in an HTTP header: printable ASCII,
// and not RedactedSecret, which is how the daemon shows a secret it
// keeps (a config read back and set again would otherwise replace its
// secret with the placeholder).
func secretValue(field, v string, maxBytes int, what string) error {
	if v == RedactedSecret {
		return Invalidf(field, "got %q, which is how the daemon shows a secret it keeps without its value; expected %s itself (set it again, or leave the config as it is)", v, what)
	}
	return headerValue(field, v, maxBytes, what)
}

// headerValue checks text sent in an HTTP header: printable ASCII.
func headerValue(field, v string, maxBytes int, what string) error {
	if len(v) > maxBytes {
		return Invalidf(field, "got %d bytes, expected at most %d", len(v), maxBytes)
	}
	for _, r := range v {
		if r < 0x20 || r >= 0x7f {
			return Invalidf(field, "got a character outside printable ASCII (%U), expected %s as printable ASCII (it is sent in an HTTP header)", r, what)
		}
	}
	return nil
}

func normalizeWebhook(w Webhook) (Webhook, error) {
	c, err := NormalizePushConfig("webhook", "webhook", w.Config())
	if err != nil {
		return w, err
	}
	return Webhook{URL: c.URL, Token: c.Token, Authentication: c.Authentication}, nil
}
