package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
)

// defaultAddr is where the CLI looks for the daemon: where it listens unless
// configured.
const defaultAddr = config.DefaultAddr

// verbHelp is what a verb's --help prints above its flags.
type verbHelp struct {
	verb    string // "send", "result post"
	summary string
	usage   string // arguments after the verb
	example string
}

// verbFlags is a verb's flag set and its --help text.
type verbFlags struct {
	*flag.FlagSet
	help func()
}

// newFlagSet returns a flag set that reports errors to the caller instead of
// printing them; parseArgs prints the verb's summary, usage, example and
// flags on --help, and only then.
func newFlagSet(e *env, h verbHelp) *verbFlags {
	fs := flag.NewFlagSet("mailroom "+h.verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage on every parse error too; errors are
	// reported by report, so Usage stays silent.
	fs.Usage = func() {}
	help := func() {
		w := e.stdout
		fmt.Fprintf(w, "mailroom %s: %s\n\nUsage:\n  mailroom %s %s\n\nExample:\n%s\n", h.verb, h.summary, h.verb, h.usage, indent(h.example))
		if fs.Lookup("ca-file") != nil {
			// Every client verb reaches a daemon over TLS the same way.
			fmt.Fprintf(w, "Over TLS (a daemon with tls_cert_file), add:\n%s\n", indent(tlsExample))
		}
		fmt.Fprint(w, "Flags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return &verbFlags{FlagSet: fs, help: help}
}

// parseArgs parses flags wherever they appear, so "result post ID --status ok"
// works as well as "result post --status ok ID", and returns the positional
// arguments. Everything after "--" is positional.
func parseArgs(fs *verbFlags, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			fs.help()
			return nil, errHelpShown
		} else if err != nil {
			return nil, &usageError{msg: flagParseError(fs.FlagSet, err)}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// badFlagValue is the flag package's message for a value it could not
// set: the value, the flag, and the value's own error.
var badFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:\s]+): (.*)$`)

// flagParseError words a flag value that did not parse as every other
// usage error is worded: the flag, what it got and what it expected
// ("--stale-after: got "abc", expected a duration such as 90s, 5m or
// 1h30m", not "invalid value "abc" for flag -stale-after: parse error").
// A value whose own error says more than "expected ..." keeps it as it is.
func flagParseError(fs *flag.FlagSet, err error) string {
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	value, name, why := m[1], m[2], m[3]
	expected, ok := strings.CutPrefix(why, "expected ")
	if !ok {
		expected, ok = expectedOf(fs.Lookup(name), why)
	}
	if !ok {
		return err.Error()
	}
	return fmt.Sprintf("%s: got %s, expected %s", flagName(name), value, expected)
}

// expectedOf says what a flag of the standard types takes, when the flag
// package's error (why) says only that it did not parse.
func expectedOf(f *flag.Flag, why string) (string, bool) {
	if f == nil || (why != "parse error" && why != "value out of range") {
		return "", false
	}
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return "", false
	}
	var expected string
	switch getter.Get().(type) {
	case time.Duration:
		expected = "a duration such as 90s, 5m or 1h30m"
	case bool:
		expected = "true or false"
	case int, int64:
		expected = "a whole number"
	case uint, uint64:
		expected = "a whole number of 0 or more"
	case float64:
		expected = "a number"
	default:
		return "", false
	}
	if why == "value out of range" {
		expected += " that fits in 64 bits"
	}
	return expected, true
}

// flagName is a flag as the help and the messages write it: -n, --json.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// parseExact parses args and requires exactly len(names) positional
// arguments, named in the error.
func parseExact(fs *verbFlags, args []string, names ...string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) < len(names) {
		return nil, usagef("missing %s", strings.Join(names[len(pos):], " "))
	}
	if len(pos) > len(names) {
		return nil, usagef("unexpected argument %q", pos[len(names)])
	}
	return pos, nil
}

// required reports the first flag in names that was not given.
func required(fs *verbFlags, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, n := range names {
		if !set[n] {
			return usagef("--%s is required", n)
		}
	}
	return nil
}

// clientFlags are the flags every verb that talks to the daemon shares.
type clientFlags struct {
	addr    string
	token   string
	timeout time.Duration
	tls     *tlsFlags
	// verb is "mailroom VERB", for the retry notices.
	verb string
	// notice is told each retry the client makes by itself; nil prints
	// "mailroom VERB: the leader changed; retrying" to stderr.
	notice func(reason string)
}

func addClientFlags(fs *verbFlags, e *env) *clientFlags {
	cf := &clientFlags{verb: fs.Name()}
	addr := e.getenv("MAILROOM_ADDR")
	if addr == "" {
		addr = defaultAddr
	}
	fs.StringVar(&cf.addr, "addr", addr, "daemon address, host:port or URL (env MAILROOM_ADDR)")
	// The token's value is deliberately not shown as the flag's default.
	fs.StringVar(&cf.token, "token", "", "bearer token for the daemon (env MAILROOM_TOKEN)")
	fs.DurationVar(&cf.timeout, "timeout", 10*time.Second, "give up on the daemon after this long (0: never)")
	cf.tls = addTLSFlags(fs, e)
	return cf
}

// connect returns a client and a context bounded by --timeout.
func (cf *clientFlags) connect(ctx context.Context, e *env) (*client.Client, context.Context, context.CancelFunc, error) {
	c, err := cf.client(e)
	if err != nil {
		return nil, nil, nil, err
	}
	cancel := context.CancelFunc(func() {})
	if cf.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, cf.timeout)
	}
	return c, ctx, cancel, nil
}

// client checks --addr and --timeout and returns a client sending --token
// (or MAILROOM_TOKEN), with extra options.
func (cf *clientFlags) client(e *env, extra ...client.Option) (*client.Client, error) {
	if cf.timeout < 0 {
		return nil, usagef("--timeout: got %s, expected a duration of 0 or more", cf.timeout)
	}
	token := cf.token
	if token == "" {
		token = e.getenv("MAILROOM_TOKEN")
	}
	notice := cf.notice
	if notice == nil {
		// A shared mailbox whose lead changed did nothing with the
		// request; the client sends it again, and says so once a retry.
		notice = func(reason string) { fmt.Fprintf(e.stderr, "%s: %s; retrying\n", cf.verb, reason) }
	}
	opts := append([]client.Option{client.WithRetryNotice(notice)}, extra...)
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	tlsConfig, err := cf.tls.config()
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		opts = append(opts, client.WithTLS(tlsConfig))
	}
	c, err := client.New(cf.addr, opts...)
	if err != nil {
		return nil, usagef("--addr: %v", err)
	}
	return c, nil
}

// optionalInt64 is an int64 flag that remembers whether it was given, so
// "not set" and 0 stay different (status filters are null when unset).
type optionalInt64 struct{ v *int64 }

func (o *optionalInt64) String() string {
	if o == nil || o.v == nil {
		return ""
	}
	return fmt.Sprint(*o.v)
}

func (o *optionalInt64) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("expected a whole number")
	}
	o.v = &n
	return nil
}

// repeated collects every use of a repeatable flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(s string) error { *r = append(*r, s); return nil }
