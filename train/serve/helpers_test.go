package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
)

// smoke is the embedded smoke config the tests serve.
func smoke(t testing.TB) *configs.Config {
	t.Helper()
	cfg, err := configs.Named("smoke")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testServer serves cfg on a loopback listener for the test's lifetime.
type testServer struct {
	t   testing.TB
	srv *Server
	ts  *httptest.Server
}

func newTestServer(t testing.TB, cfg *configs.Config, opt Options) *testServer {
	t.Helper()
	s, err := New(cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return &testServer{t: t, srv: s, ts: ts}
}

// do sends a request with a JSON body (v marshalled, or a string or []byte
// sent as it is) and returns the status, headers and body.
func (s *testServer) do(method, path string, v any, header ...string) (int, http.Header, []byte) {
	s.t.Helper()
	var body io.Reader
	switch b := v.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		js, err := json.Marshal(v)
		if err != nil {
			s.t.Fatal(err)
		}
		body = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, s.ts.URL+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.ts.Client().Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// json sends a request and decodes a 2xx answer into out, failing on any other status.
func (s *testServer) json(method, path string, in, out any) {
	s.t.Helper()
	status, _, body := s.do(method, path, in)
	if status/100 != 2 {
		s.t.Fatalf("%s %s: %d %s", method, path, status, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, body, err)
		}
	}
}

// apiErr decodes an error body.
func apiErr(t testing.TB, body []byte) apiError {
	t.Helper()
	var e struct {
		Error apiError `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error
}
