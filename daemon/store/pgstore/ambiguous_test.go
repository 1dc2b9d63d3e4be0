package pgstore_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/daemon/store/storetest"
)

// faultProxy sits between the store and PostgreSQL. Once cut, the
// connections open at that moment stop carrying bytes one way and are
// closed a moment later: a network that fails in the middle of a
// statement.
type faultProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	pipes  []*pipe
}

type pipe struct {
	client, server net.Conn
	dropUp         atomic.Bool // client to server
	dropDown       atomic.Bool // server to client
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, pp := range p.pipes {
			pp.client.Close()
			pp.server.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			pp := &pipe{client: c, server: s}
			p.mu.Lock()
			p.pipes = append(p.pipes, pp)
			p.mu.Unlock()
			go copyUnless(s, c, &pp.dropUp)
			go copyUnless(c, s, &pp.dropDown)
		}
	}()
	return p
}

// copyUnless copies from src to dst, swallowing what arrives while drop
// is set.
func copyUnless(dst, src net.Conn, drop *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !drop.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

// cut makes the open connections swallow what goes one way (down: the
// server's answers; up: the client's statements) and closes them after
// wait.
func (p *faultProxy) cut(down bool, wait time.Duration) {
	p.mu.Lock()
	pipes := append([]*pipe(nil), p.pipes...)
	p.mu.Unlock()
	for _, pp := range pipes {
		if down {
			pp.dropDown.Store(true)
		} else {
			pp.dropUp.Store(true)
		}
	}
	time.AfterFunc(wait, func() {
		for _, pp := range pipes {
			pp.client.Close()
			pp.server.Close()
		}
	})
}

// proxied returns dbURL with its host and port replaced by the proxy's.
func proxied(t *testing.T, dbURL string, p *faultProxy) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String()
}

// An append whose answer is lost after PostgreSQL committed it is
// settled from the table: done says nil, because the rows are there. One
// whose statement never arrived is settled the other way: done says why,
// and nothing is there. Either way the store goes on after Reset.
func TestAnAppendOfUnknownOutcomeIsSettledByTheTable(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		t.Skipf("MAILROOM_TEST_PG must be a postgres:// URL with a host for the fault proxy (got %s)", pgstore.Redact(dbURL))
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	for _, c := range []struct {
		name    string
		down    bool // the answer is lost (the statement ran) or the statement is
		written bool
	}{
		{"the answer is lost", true, true},
		{"the statement is lost", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := pgtest.Schema(t, dbURL, t.Name())
			proxy := startFaultProxy(t, target)
			w := storetest.NewWorkload(9)
			s := follow(t, pgstore.Options{URL: proxied(t, dbURL, proxy), Schema: schema, Holder: "ambiguous"})
			defer s.Close()
			waitLead(t, s)
			storetest.AppendAll(t, s, w.Events(t, 5)...)
			epoch := s.Epoch()

			proxy.cut(c.down, 300*time.Millisecond)
			ev := w.Next(t)
			err := appendOne(t, s, ev)
			rows := query(t, dbURL, `SELECT count(*) FROM `+schema+`.events WHERE seq = 6 AND epoch = $1`, epoch)
			switch {
			case c.written && (err != nil || rows != 1):
				t.Fatalf("the answer was lost after the commit: done(%v), %d rows; want nil and the row", err, rows)
			case !c.written && (err == nil || rows != 0):
				t.Fatalf("the statement never arrived: done(%v), %d rows; want an error and no row", err, rows)
			}
			if !c.written {
				// It stepped down; it leads again by a campaign.
				appendAgain(t, s, ev)
			}
			storetest.AppendAll(t, s, w.Events(t, 3)...)
			s.Close()
			s2 := openLeading(t, dbURL, schema)
			defer s2.Close()
			st, _ := storetest.LoadState(t, s2)
			storetest.SameState(t, st, w.State)
		})
	}
}
