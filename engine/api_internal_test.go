package engine

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
