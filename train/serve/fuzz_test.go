package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/setup"
)

// The request decoding is fuzzed through the whole handler: any body sent to
// any endpoint gets a JSON answer below 500, and a 4xx names a field.
//
//	go test ./train/serve -run '^$' -fuzz FuzzRequests -fuzztime 60s

var fuzzServer = sync.OnceValue(func() *Server {
	cfg, err := configs.Named("smoke")
	if err != nil {
		panic(err)
	}
	// No memory bound: admission reads the whole test process's live heap,
	// which the package's other tests (and their repetitions under -count)
	// fill; what fuzzing checks is answers, not admission.
	s, err := New(cfg, Options{MaxEpisodes: 64, MaxScorers: 4, MaxMemory: -1})
	if err != nil {
		panic(err)
	}
	return s
})

// fuzzEndpoints are the endpoints with a body; {id} is a live episode, {sc} a scorer.
var fuzzEndpoints = []string{
	"POST /v1/episodes",
	"POST /v1/episodes/{id}/reset",
	"POST /v1/episodes/{id}/step",
	"POST /v1/expert",
	"POST /v1/score",
	"POST /v1/scorers",
	"POST /v1/scorers/{sc}/score",
	"GET /v1/episodes/{id}/view.png?size=",
	"GET /v1/episodes/{id}/frames/",
}

func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		`{}`, ``, `{"split":"val","index":3}`, `{"seed":1099511627777}`, `{"family":"text_extraction"}`,
		`{"op":"SEGMENT_OBJECT_AT","x":3,"y":4}`, `{"op":"ANSWER","answer":"red"}`, `{"index":70}`,
		`{"items":[{"task":{"split":"val","index":0},"actions":[{"op":"ANSWER","answer":"red"}]}]}`,
		`{"items":[{"episode":"{id}"}],"stage":"Phase2_Learn_Coherence","weights":{"final":2}}`,
		`{"stage":"x"}`, `[`, `{"x":1e400}`, `{"index":-9223372036854775808}`, `"\u0000"`, `64`, `0.png`,
	} {
		for i := range fuzzEndpoints {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		s := fuzzServer()
		ep := httptest.NewRecorder()
		s.ServeHTTP(ep, httptest.NewRequest("POST", "/v1/episodes", strings.NewReader(`{"split":"val","index":1}`)))
		var ev episodeView
		json.Unmarshal(ep.Body.Bytes(), &ev)
		defer s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", "/v1/episodes/"+ev.Episode, nil))
		sc := httptest.NewRecorder()
		s.ServeHTTP(sc, httptest.NewRequest("POST", "/v1/scorers", nil))
		var sv scorerView
		json.Unmarshal(sc.Body.Bytes(), &sv)
		defer s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", "/v1/scorers/"+sv.Scorer, nil))

		ept := fuzzEndpoints[int(which)%len(fuzzEndpoints)]
		method, path, _ := strings.Cut(strings.NewReplacer("{id}", ev.Episode, "{sc}", sv.Scorer).Replace(ept), " ")
		body = strings.ReplaceAll(body, "{id}", ev.Episode)
		var req *http.Request
		if method == "GET" {
			req = httptest.NewRequest(method, "/", nil)
			req.URL.Path, _, _ = strings.Cut(path, "?")
			if strings.HasSuffix(path, "=") {
				req.URL.RawQuery = "size=" + url.QueryEscape(body)
			} else {
				req.URL.Path += body
			}
		} else {
			req = httptest.NewRequest(method, path, bytes.NewReader([]byte(body)))
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if loc := rec.Header().Get("Location"); loc != "" { // keep the shared server below its caps
			defer s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", loc, nil))
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %q with %q: %d %s", method, req.URL, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var e struct {
				Error apiError `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Status != rec.Code || e.Error.Field == "" {
				t.Fatalf("%s %q with %q: %d with body %s", method, req.URL, body, rec.Code, rec.Body)
			}
		}
	})
}

// FuzzDecode fuzzes the decoders and validators alone, much faster.
func FuzzDecode(f *testing.F) {
	f.Add(`{"op":"SEGMENT_OBJECT_AT","x":3,"y":4}`)
	f.Add(`{"split":"test","seed":2199023255553,"family":"object_counting"}`)
	f.Add(`{"items":[{"task":{"index":1},"actions":[{"index":3}],"group":2}],"weights":{"final":1}}`)
	cfg, _ := configs.Named("smoke")
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		f.Fatal(err)
	}
	families := ec.Families
	f.Fuzz(func(t *testing.T, body string) {
		var a actionSpec
		if err := decodeJSON([]byte(body), &a, false); err == nil {
			if _, err := a.action(""); err != nil && (err.Status != 400 || err.Field == "") {
				t.Fatalf("action %q: %+v", body, err)
			}
		} else if err.Field == "" || err.Status/100 != 4 {
			t.Fatalf("decode %q: %+v", body, err)
		}
		var ts taskSpec
		if err := decodeJSON([]byte(body), &ts, true); err == nil {
			rt, err := ts.resolve("", families)
			if err != nil && (err.Status != 400 || err.Field == "") {
				t.Fatalf("task %q: %+v", body, err)
			}
			if err == nil && !rt.random && (rt.index < 0 || rt.index >= maxIndex || rt.split > 2) {
				t.Fatalf("task %q resolved to %+v", body, rt)
			}
		}
		var sr scoreRequest
		if err := decodeJSON([]byte(body), &sr, false); err != nil && err.Field == "" {
			t.Fatalf("score %q: %+v", body, err)
		}
	})
}
