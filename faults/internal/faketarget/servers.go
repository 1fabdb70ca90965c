package faketarget

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// HTTPLink starts an HTTP server that answers every request with body and
// returns the link naming it; the server closes at the end of the test.
func HTTPLink(tb testing.TB, name, body string) contract.Link {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, body)
	}))
	tb.Cleanup(srv.Close)
	return contract.Link{Name: name, From: "router", To: "prefill", Kind: contract.LinkHTTP,
		Addr: strings.TrimPrefix(srv.URL, "http://")}
}

// EchoLink starts a TCP echo server and returns the link naming it; the
// server and its connections close at the end of the test.
func EchoLink(tb testing.TB, name string) contract.Link {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				c.Close()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return contract.Link{Name: name, From: "prefill", To: "decode", Kind: contract.LinkKV, Addr: ln.Addr().String()}
}
