package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
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
		decoded <- readJSON(w, r, &v)
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

// A body past maxRequestBody is refused with a 413 naming the limit, not
// read into memory; one under it that is not JSON is a 400.
func TestReadJSONBoundsTheBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v struct{ Text string }
		if err := readJSON(w, r, &v); err != nil {
			badBody(w, "test body", err)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		body io.Reader
		want int
		msg  string
	}{
		{"too large", io.MultiReader(strings.NewReader(`{"Text":"`), io.LimitReader(neverEnding('a'), maxRequestBody+1)), http.StatusRequestEntityTooLarge, "test body: larger than"},
		{"not JSON", strings.NewReader("hello"), http.StatusBadRequest, "decode test body: "},
		{"fine", strings.NewReader(`{"Text":"hi"}`), http.StatusOK, ""},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.msg) {
			t.Errorf("%s: status %d body %q, want %d naming %q", tc.name, resp.StatusCode, b, tc.want, tc.msg)
		}
	}
}

// neverEnding reads as an endless run of one byte.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// readJSON reads a small body whole and unmarshals it; whatever the body,
// v and the error must be what decoding it as a stream gives (the way it
// was read before), trailing bytes and type errors included.
func TestReadJSONAsTheStreamDecoder(t *testing.T) {
	t.Parallel()
	type inner struct {
		N *uint64 `json:"n"`
	}
	type body struct {
		Text  string          `json:"text"`
		Rid   string          `json:"rid,omitempty"`
		In    inner           `json:"in"`
		Raw   json.RawMessage `json:"raw"`
		Count int             `json:"count"`
	}
	big := `{"text":"` + strings.Repeat("a", maxBodyTail) + `"}`
	for _, in := range []string{
		`{"text":"hi","rid":"r1","in":{"n":7},"raw":[1,{"a":"b"}],"count":3}`,
		`{"text":"hi"}` + "\n", ` {"TEXT":"case"} `, `{"text":"hi"} {"text":"second"}`, `{"text":"hi"}garbage`,
		`{"text":5,"rid":"after"}`, `{"count":"x","text":"kept"}`, `{"text":"cut`, `hello`, ``, `null`, `[]`,
		`{"text":"\u00e9\ud83d\ude00"}`, big, big + "x",
	} {
		var want, got body
		wantErr := decodeJSONStream(strings.NewReader(in), &want)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(in))
		gotErr := readJSON(rec, req, &got)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("body %.40q: got %+v (%v), want %+v (%v)", in, got, gotErr, want, wantErr)
		}
		// The same without a Content-Length (a chunked body).
		var chunked body
		req = httptest.NewRequest(http.MethodPost, "/", io.MultiReader(strings.NewReader(in)))
		req.ContentLength = -1
		if err := readJSON(rec, req, &chunked); fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(chunked, want) {
			t.Errorf("chunked body %.40q: got %+v (%v), want %+v (%v)", in, chunked, err, want, wantErr)
		}
	}
}
