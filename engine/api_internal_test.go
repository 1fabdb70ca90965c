package engine

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	h := loopbackOnly(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	for _, tc := range []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:5000", http.StatusTeapot},
		{"[::1]:5000", http.StatusTeapot},
		{"10.1.2.3:5000", http.StatusForbidden},
		{"192.168.0.9:80", http.StatusForbidden},
		{"garbage", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/debug/rooms", nil)
		req.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		h(rec, req)
		if rec.Code != tc.want {
			t.Errorf("remote %s: status %d, want %d", tc.remote, rec.Code, tc.want)
		}
	}
}

// A client that goes away after sending its body is seen (r.Context()
// ends) even when the body's tail came in a later read than its JSON
// value: readJSON reads to the body's end, which is what lets the server
// watch the connection.
func TestReadJSONSeesTheClientGo(t *testing.T) {
	t.Parallel()
	decoded := make(chan error, 1)
	seen := make(chan struct{})
	gotValue := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v struct{ A int }
		r.Body = &firstReadBody{ReadCloser: r.Body, read: gotValue}
		decoded <- readJSON(r, &v)
		select {
		case <-r.Context().Done():
			close(seen)
		case <-time.After(20 * time.Second):
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		// The value, then, once the server has read it, its trailing
		// newline and the body's end.
		_, _ = pw.Write([]byte(`{"a":1}`))
		<-gotValue
		_, _ = pw.Write([]byte("\n"))
		_ = pw.Close()
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, pr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if err := <-decoded; err != nil {
		t.Fatalf("readJSON: %v", err)
	}
	cancel()
	<-done
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never saw its client go away")
	}
}

// firstReadBody closes read after its first read that returned data.
type firstReadBody struct {
	io.ReadCloser
	read chan struct{}
	once sync.Once
}

func (b *firstReadBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.once.Do(func() { close(b.read) })
	}
	return n, err
}
