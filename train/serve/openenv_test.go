package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/pixelis/pixelis/train/env"
)

// wsClient is a test's OpenEnv WebSocket connection.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

// dialOpenEnv opens /openenv/ws (with query, and the token when given).
func dialOpenEnv(t *testing.T, ts *httptest.Server, query, token string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{HTTPClient: ts.Client(), HTTPHeader: http.Header{}}
	if token != "" {
		opts.HTTPHeader.Set("Authorization", "Bearer "+token)
	}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+openenvPrefix+"/ws"+query, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(16 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: t, c: c}
}

// send sends a message (v marshalled, a string as it is) and decodes the answer.
func (w *wsClient) send(v any) (typ string, data map[string]any) {
	w.t.Helper()
	msg, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			w.t.Fatal(err)
		}
		msg = string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		w.t.Fatalf("write %s: %v", msg, err)
	}
	_, b, err := w.c.Read(ctx)
	if err != nil {
		w.t.Fatalf("answer to %s: %v", msg, err)
	}
	var a struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		w.t.Fatalf("answer %s: %v", b, err)
	}
	return a.Type, a.Data
}

// ok sends a message and fails unless the answer is of type want.
func (w *wsClient) ok(want string, v any) map[string]any {
	w.t.Helper()
	typ, data := w.send(v)
	if typ != want {
		w.t.Fatalf("%v: answer %s %v, want %s", v, typ, data, want)
	}
	return data
}

// TestOpenEnvWebSocketPlaysLikeStep plays the expert's actions on training
// tasks through OpenEnv's WebSocket session and through POST
// /v1/episodes/{id}/step: the same results, rewards and endings, step by
// step, and the episode closes with the connection.
func TestOpenEnvWebSocketPlaysLikeStep(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	ws := dialOpenEnv(t, ts.ts, "", "")
	var experts struct{ Experts []expertView }
	tasks := []map[string]any{}
	for i := range 12 {
		tasks = append(tasks, map[string]any{"split": "train", "index": i})
	}
	ts.json("POST", "/v1/experts", map[string]any{"tasks": tasks, "observation": map[string]any{"coarse": false}}, &experts)
	for i, ex := range experts.Experts {
		first := ws.ok("observation", map[string]any{"type": "reset", "data": tasks[i]})
		obs := first["observation"].(map[string]any)
		if first["reward"] != nil || first["done"] != false || obs["task"].(map[string]any)["question"] != ex.Task.Question {
			t.Fatalf("task %d: reset %v", i, first)
		}
		var ep episodeView
		ts.json("POST", "/v1/episodes", map[string]any{"split": "train", "index": i, "observation": map[string]any{"coarse": false}}, &ep)
		for k, a := range ex.Actions {
			act := actionSpec{Op: &a.Op, X: a.X, Y: a.Y, Answer: a.Answer}
			got := ws.ok("observation", map[string]any{"type": "step", "data": act})
			var want stepView
			ts.json("POST", "/v1/episodes/"+ep.Episode+"/step", act, &want)
			o := got["observation"].(map[string]any)
			var result env.StepResult // compared as the same type's JSON
			raw, _ := json.Marshal(o["result"])
			json.Unmarshal(raw, &result)
			wantResult, _ := json.Marshal(want.Result)
			gotResult, _ := json.Marshal(result)
			delete(o, "content")
			if got["reward"] != want.Reward || got["done"] != want.Done || string(gotResult) != string(wantResult) ||
				o["terminated"] != want.Terminated || o["truncated"] != want.Truncated || len(o["allowed_actions"].([]any)) != len(want.AllowedActions) {
				t.Fatalf("task %d step %d: OpenEnv %v, serve %+v", i, k+1, got, want)
			}
		}
		if fin := ws.ok("state", map[string]any{"type": "state"}); fin["done"] != true || fin["step_count"] != float64(len(ex.Actions)) {
			t.Fatalf("task %d: state %v", i, fin)
		}
	}
	if eps, _ := ts.srv.Live(); eps != 1+len(experts.Experts) {
		t.Fatalf("%d live episodes, want the session's and %d", eps, len(experts.Experts))
	}
	ws.c.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the session's episode to close", func() bool { eps, _ := ts.srv.Live(); return eps == len(experts.Experts) })
}

// waitFor polls cond until it holds, failing after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOpenEnvMCPToolsAnswerWithTheView plays tools over HTTP MCP in a
// session an MCP client created and attached a WebSocket to: each tool call
// answers with the new view as PNG image content, the pixels of view.png.
func TestOpenEnvMCPToolsAnswerWithTheView(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{Token: "0123456789abcdef"})
	auth := []string{"Authorization", "Bearer 0123456789abcdef"}
	rpc := func(method string, params map[string]any) map[string]any {
		t.Helper()
		status, _, body := ts.do("POST", openenvPrefix+"/mcp", map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, auth...)
		var resp map[string]any
		if err := json.Unmarshal(body, &resp); status != 200 || err != nil || resp["id"] != float64(7) {
			t.Fatalf("%s: %d %s", method, status, body)
		}
		return resp
	}
	sid := rpc("openenv/session/create", map[string]any{})["result"].(map[string]any)["session_id"].(string)
	ws := dialOpenEnv(t, ts.ts, "?session_id="+sid, "0123456789abcdef")
	ws.ok("observation", map[string]any{"type": "reset", "data": map[string]any{"split": "val", "index": 1, "image_size": 96}})
	tools := rpc("tools/list", map[string]any{"session_id": sid})["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 6 || tools[0].(map[string]any)["name"] != "segment_object_at" || tools[5].(map[string]any)["name"] != "answer" {
		t.Fatalf("tools %v", tools)
	}
	res := rpc("tools/call", map[string]any{"session_id": sid, "name": "segment_object_at", "arguments": map[string]any{"x": 28, "y": 20}})["result"].(map[string]any)
	sc := res["structuredContent"].(map[string]any)
	content := res["content"].([]any)
	img := content[1].(map[string]any)
	if res["isError"] != false || sc["reward"] != -0.02 || img["type"] != "image" || img["mimeType"] != "image/png" {
		t.Fatalf("tools/call: %v", res)
	}
	pix, err := base64.StdEncoding.DecodeString(img["data"].(string))
	if err != nil {
		t.Fatal(err)
	}
	_, _, view := ts.do("GET", "/v1/episodes/"+sc["episode_id"].(string)+"/view.png?size=96", nil, auth...)
	if !bytes.Equal(pix, view) {
		t.Fatal("the image content is not view.png's")
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(pix)); err != nil || cfg.Width != 96 {
		t.Fatalf("image %+v %v", cfg, err)
	}
	if e := rpc("tools/call", map[string]any{"session_id": sid, "name": "segment_object_at", "arguments": map[string]any{"x": 28}})["error"].(map[string]any); !strings.Contains(e["message"].(string), "params.arguments.y: required") {
		t.Fatalf("missing y: %v", e)
	}
	if e := rpc("tools/call", map[string]any{"session_id": sid, "name": "reset"})["error"].(map[string]any); !strings.Contains(e["message"].(string), "unknown tool") {
		t.Fatalf("unknown tool: %v", e)
	}
	closing := rpc("openenv/session/close", map[string]any{"session_id": sid})["result"].(map[string]any)
	if closing["closing"] != true {
		t.Fatalf("close while attached: %v", closing)
	}
	ws.c.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the closed session's episode to close", func() bool { eps, _ := ts.srv.Live(); return eps == 0 })
	if e := rpc("tools/call", map[string]any{"session_id": sid, "name": "zoom_in"})["error"].(map[string]any); !strings.Contains(e["message"].(string), "no live OpenEnv session") {
		t.Fatalf("closed session: %v", e)
	}
}

// TestOpenEnvHTTP plays over OpenEnv's HTTP endpoints, which name the
// episode by its id, and checks the schema, health and metadata.
func TestOpenEnvHTTP(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	var reset struct {
		Observation openenvObservation `json:"observation"`
		Reward      *float64           `json:"reward"`
		Done        bool               `json:"done"`
	}
	ts.json("POST", openenvPrefix+"/reset", map[string]any{"split": "train", "index": 3}, &reset)
	id := reset.Observation.EpisodeID
	if reset.Reward != nil || reset.Done || reset.Observation.Task.Index != 3 || len(reset.Observation.Content) != 2 {
		t.Fatalf("reset %+v", reset)
	}
	var step map[string]any
	ts.json("POST", openenvPrefix+"/step", map[string]any{"action": map[string]any{"op": "READ_TEXT"}, "episode_id": id, "timeout_s": 5}, &step)
	if step["reward"] == nil || step["observation"].(map[string]any)["step"] != float64(1) {
		t.Fatalf("step %v", step)
	}
	var st openenvState
	ts.json("GET", openenvPrefix+"/state?episode_id="+id, nil, &st)
	if st.StepCount != 1 || *st.EpisodeID != id {
		t.Fatalf("state %+v", st)
	}
	ts.json("POST", openenvPrefix+"/reset", map[string]any{"episode_id": id, "split": "train", "index": 4}, &reset)
	if reset.Observation.EpisodeID != id || reset.Observation.Task.Index != 4 || reset.Observation.Step != 0 {
		t.Fatalf("reset of a live episode %+v", reset)
	}
	for _, c := range []struct {
		path  string
		body  any
		field string
	}{
		{"/step", map[string]any{"action": map[string]any{"op": "READ_TEXT"}}, "episode_id"},
		{"/step", map[string]any{"episode_id": id}, "action"},
		{"/step", map[string]any{"episode_id": id, "action": map[string]any{"op": "ANSWER"}}, "action.answer"},
		{"/step", map[string]any{"episode_id": id, "action": map[string]any{"op": "READ_TEXT", "colour": 1}}, "action.colour"},
		{"/step", map[string]any{"episode_id": id, "action": map[string]any{"type": "call_tool"}}, "action.tool_name"},
		{"/reset", map[string]any{"image_size": 4}, "image_size"},
		{"/reset", map[string]any{"split": "dev"}, "split"},
		{"/reset", map[string]any{"episode_id": "ep-none"}, "episode_id"},
	} {
		status, _, body := ts.do("POST", openenvPrefix+c.path, c.body)
		if e := apiErr(t, body); status/100 != 4 || e.Field != c.field {
			t.Errorf("%s %v: %d %+v, want a 4xx naming %s", c.path, c.body, status, e, c.field)
		}
	}
	var schema map[string]any
	ts.json("GET", openenvPrefix+"/schema", nil, &schema)
	for _, k := range []string{"action", "observation", "state"} {
		if _, ok := schema[k].(map[string]any); !ok {
			t.Errorf("schema lacks %s: %v", k, schema)
		}
	}
	var health, meta map[string]any
	ts.json("GET", openenvPrefix+"/health", nil, &health)
	ts.json("GET", openenvPrefix+"/metadata", nil, &meta)
	if health["status"] != "healthy" || meta["name"] != "pixelis" {
		t.Fatalf("health %v, metadata %v", health, meta)
	}
}

// TestOpenEnvWebSocketErrors: what OpenEnv's clients read as errors, with
// OpenEnv's codes, and the session goes on.
func TestOpenEnvWebSocketErrors(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	ws := dialOpenEnv(t, ts.ts, "", "")
	for _, c := range []struct {
		msg  any
		code string
	}{
		{"{not json", "INVALID_JSON"},
		{map[string]any{"type": "jump"}, "UNKNOWN_TYPE"},
		{map[string]any{"type": "step", "data": map[string]any{"op": "READ_TEXT"}}, "EXECUTION_ERROR"}, // before any reset
		{map[string]any{"type": "reset", "data": map[string]any{"index": -1}}, "VALIDATION_ERROR"},
		{map[string]any{"type": "state", "data": map[string]any{}}, "VALIDATION_ERROR"},
		{map[string]any{"type": "step", "extra": 1}, "VALIDATION_ERROR"},
	} {
		if typ, data := ws.send(c.msg); typ != "error" || data["code"] != c.code {
			t.Errorf("%v: %s %v, want error %s", c.msg, typ, data, c.code)
		}
	}
	ws.ok("observation", map[string]any{"type": "reset", "data": map[string]any{"split": "train", "index": 0}})
	ws.ok("observation", map[string]any{"type": "step", "data": map[string]any{"op": "ANSWER", "answer": "no"}})
	if typ, data := ws.send(map[string]any{"type": "step", "data": map[string]any{"op": "READ_TEXT"}}); typ != "error" || !strings.Contains(data["message"].(string), "is over") {
		t.Errorf("a step after the end: %s %v", typ, data)
	}
	if typ, data := ws.send(map[string]any{"type": "mcp", "data": map[string]any{"jsonrpc": "2.0", "id": "a", "method": "tools/call",
		"params": map[string]any{"name": "read_text"}}}); typ != "mcp" || data["result"].(map[string]any)["isError"] != true {
		t.Errorf("a tool call on the over episode: %s %v", typ, data)
	}
	orphan := dialOpenEnv(t, ts.ts, "?session_id=oe-none", "")
	if _, b, err := orphan.c.Read(context.Background()); err != nil || !strings.Contains(string(b), "SESSION_ERROR") {
		t.Errorf("attaching to an unknown session: %s %v", b, err)
	}
	if _, _, err := orphan.c.Read(context.Background()); err == nil {
		t.Error("the connection to an unknown session stays open")
	}
}

// TestOpenEnvTokenAndTimeouts: the token guards every OpenEnv endpoint but
// health, the WebSocket included; a WebSocket session outlives the
// server's request read and write time-outs.
func TestOpenEnvTokenAndTimeouts(t *testing.T) {
	s, err := New(smoke(t), Options{Token: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	const timeout = 200 * time.Millisecond
	ts.Config.ReadTimeout, ts.Config.WriteTimeout = timeout, timeout
	ts.Start()
	t.Cleanup(func() { ts.Close(); s.Close() })
	for _, r := range openenvRoutes {
		method, path, _ := strings.Cut(r.pattern, " ")
		req, _ := http.NewRequest(method, ts.URL+path, nil)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: 200, false: 401}[path == openenvPrefix+"/health"]; resp.StatusCode != want {
			t.Errorf("%s without the token: %d, want %d", r.pattern, resp.StatusCode, want)
		}
	}
	ws := dialOpenEnv(t, ts, "", "0123456789abcdef")
	ws.ok("observation", map[string]any{"type": "reset"})
	start := time.Now()
	waitFor(t, "the server's time-outs to pass", func() bool { return time.Since(start) > 3*timeout })
	ws.ok("observation", map[string]any{"type": "step", "data": map[string]any{"op": "READ_TEXT"}})
}

// TestOpenEnvCloseEndsSessions: Close ends the WebSocket sessions (which
// http.Server.Shutdown does not wait for) and closes their episodes.
func TestOpenEnvCloseEndsSessions(t *testing.T) {
	s, err := New(smoke(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	ws := dialOpenEnv(t, ts, "", "")
	ws.ok("observation", map[string]any{"type": "reset"})
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := ws.c.Read(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("the session outlived Close: %v", err)
	}
	if eps, _ := s.Live(); eps != 0 {
		t.Fatalf("%d live episodes after Close", eps)
	}
}

// TestOpenEnvJSONRPC: MCP's handshake, notifications and JSON-RPC's errors.
func TestOpenEnvJSONRPC(t *testing.T) {
	ts := newTestServer(t, smoke(t), Options{})
	for _, c := range []struct {
		body   string
		status int
		want   string // in the answer
	}{
		{`{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}}`, 200, `"protocolVersion":"2025-06-18"`},
		{`{"jsonrpc": "2.0", "method": "notifications/initialized"}`, 202, ``},
		{`{"jsonrpc": "2.0", "id": 2, "method": "ping"}`, 200, `"result":{}`},
		{`{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}`, 200, `"name":"segment_object_at"`},
		{`{"jsonrpc": "2.0", "id": 4, "method": "resources/list"}`, 200, `"code":-32601`},
		{`{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "zoom_in"}}`, 200, `params.session_id: required`},
		{`{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"colour": 1}}`, 200, `"code":-32602`},
		{`{"jsonrpc": "1.0", "id": 7, "method": "ping"}`, 200, `"code":-32600`},
		{`{not json`, 200, `"code":-32700`},
	} {
		status, _, body := ts.do("POST", openenvPrefix+"/mcp", c.body)
		if status != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want %d and %s", c.body, status, body, c.status, c.want)
		}
	}
}
