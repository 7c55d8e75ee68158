package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pixelis/pixelis/train/env"
)

// OpenEnv's environment protocol, served under /openenv: what the openenv
// package's clients (EnvClient, GenericEnvClient, MCPToolClient) send and
// expect, mapped onto serve's own episodes. A client's base URL is
// http://host:port/openenv; its WebSocket is /openenv/ws, its MCP endpoint
// /openenv/mcp. Every episode played here is an ordinary serve episode (its
// id is the observation's episode_id), so /v1/episodes/{id}/view.png,
// /trajectory and /v1/score work on it too.
//
//   - A WebSocket session (openenv_ws.go) owns one episode at a time: reset
//     starts a task in it, step takes an action, state describes it; the
//     episode closes with the connection.
//   - MCP (openenv_mcp.go): the five pixel operations and ANSWER are tools,
//     each answering with the step's text and the new view as image content.
//   - HTTP /reset, /step and /state name the episode by its id: OpenEnv's
//     own HTTP endpoints keep no episode between requests, serve's do.
//
// The token and loopback rules are serve's: every request but GET
// /openenv/health carries the bearer token (EnvClient's headers argument).

// openenvPrefix is where the protocol is served: the clients' base URL path.
const openenvPrefix = "/openenv"

// openenvRoutes are the OpenEnv endpoints; GET /v1/openapi.json documents
// the routes of serve's own API, GET /openenv/schema these.
var openenvRoutes = []route{
	{"GET " + openenvPrefix + "/health", (*Server).handleOpenEnvHealth},
	{"GET " + openenvPrefix + "/metadata", (*Server).handleOpenEnvMetadata},
	{"GET " + openenvPrefix + "/schema", (*Server).handleOpenEnvSchema},
	{"POST " + openenvPrefix + "/reset", (*Server).handleOpenEnvReset},
	{"POST " + openenvPrefix + "/step", (*Server).handleOpenEnvStep},
	{"GET " + openenvPrefix + "/state", (*Server).handleOpenEnvState},
	{"POST " + openenvPrefix + "/mcp", (*Server).handleOpenEnvMCP},
	{"GET " + openenvPrefix + "/ws", (*Server).handleOpenEnvWS},
}

// publicPaths answer GET without the bearer token: health checks.
var publicPaths = map[string]bool{"/v1/health": true, openenvPrefix + "/health": true}

// openenvSession is an OpenEnv session: one episode at a time (none before
// the first reset), played over a WebSocket, MCP calls, or both (an
// MCPToolClient creates the session over HTTP, then attaches its WebSocket).
type openenvSession struct {
	id       string
	mu       sync.Mutex
	episode  string // serve episode id, "" before the first reset
	attached bool   // a WebSocket is attached
	closing  bool   // closed by MCP while attached: the WebSocket's end removes it
	used     atomic.Int64
}

func (o *openenvSession) lastUse() *atomic.Int64 { return &o.used }

// newOpenEnvSession stores a session without an episode (held by a
// WebSocket when attached); 503 when --max-episodes sessions are live.
func (s *Server) newOpenEnvSession(attached bool) (*openenvSession, *apiError) {
	if !s.openenv.reserve(1) {
		return nil, s.full("OpenEnv sessions", "--max-episodes", s.opt.MaxEpisodes, s.openenv.oldestUse())
	}
	o := &openenvSession{id: newID("oe-"), attached: attached}
	o.used.Store(s.opt.Now().UnixNano())
	s.openenv.insert(o.id, o)
	return o, nil
}

// openenvLookup finds a live session and locks it; the caller unlocks.
func (s *Server) openenvLookup(id string) (*openenvSession, *apiError) {
	if o, ok := s.openenv.get(id); ok {
		o.mu.Lock()
		o.used.Store(s.opt.Now().UnixNano())
		return o, nil
	}
	return nil, errorf(http.StatusNotFound, "session_id", "no live OpenEnv session %q (closed, idle for more than %s, or never created)", id, s.opt.IdleTimeout)
}

// closeOpenEnvSession removes a session and closes its episode.
func (s *Server) closeOpenEnvSession(o *openenvSession) {
	s.openenv.remove(o.id)
	o.mu.Lock()
	id := o.episode
	o.episode = ""
	o.mu.Unlock()
	s.dropEpisode(id)
}

// dropEpisode closes the episode id, if it is still live.
func (s *Server) dropEpisode(id string) {
	if id == "" {
		return
	}
	if e, ok := s.episodes.remove(id); ok {
		s.closeEpisode(e)
	}
}

// openenvResetRequest is what a reset carries (the data of a WebSocket
// reset message, the body of POST /openenv/reset): the task, as
// POST /v1/episodes names it (none: a random training task), and the side
// of the view's image content.
type openenvResetRequest struct {
	taskSpec
	ImageSize *int `json:"image_size,omitempty"`
	// EpisodeID, over HTTP only, is a live episode to reset instead of
	// creating one.
	EpisodeID *string `json:"episode_id,omitempty"`
}

// openenvResult is OpenEnv's answer to a reset or a step: the observation,
// the step's reward (null after a reset) and whether the episode is over.
type openenvResult struct {
	Observation any      `json:"observation"`
	Reward      *float64 `json:"reward"`
	Done        bool     `json:"done"`
}

// openenvObservation is an observation: the episode, the action mask (as
// the indices it allows), the last step as POST /v1/episodes/{id}/step
// answers it, and content as MCP carries it: a text, and the current view
// (the env.ViewSize view x and y refer to, or image_size) as a PNG image.
type openenvObservation struct {
	EpisodeID      string   `json:"episode_id"`
	Task           taskView `json:"task"`
	Step           int      `json:"step"`
	MaxSteps       int      `json:"max_steps"`
	Done           bool     `json:"done"`
	Region         [4]int   `json:"region"`
	AllowedActions []int    `json:"allowed_actions"`
	// *stepView is the step's answer (action, parameters, result,
	// terminated, truncated, reward_terms, reward, finish); nil after a
	// reset. Its step, done, region and allowed_actions are the fields above.
	*stepView
	Content []mcpContent `json:"content,omitempty"`
}

// mcpContent is one item of MCP content: text, or an image as base64.
type mcpContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// resolveImageSize is the side of a session's image content.
func resolveImageSize(p *int) (int, *apiError) {
	if p == nil {
		return env.ViewSize, nil
	}
	if *p < minImageSize || *p > maxImageSize {
		return 0, badField("image_size", "must be in [%d, %d], got %d", minImageSize, maxImageSize, *p)
	}
	return *p, nil
}

// openenvReset starts the task req names in episode id (a new episode when
// id is "" or no longer live) and returns the first observation and the
// episode's id.
func (s *Server) openenvReset(id string, req openenvResetRequest) (openenvResult, string, *apiError) {
	rt, err := req.resolve("", s.envCfg.Families)
	if err != nil {
		return openenvResult{}, "", err
	}
	size, err := resolveImageSize(req.ImageSize)
	if err != nil {
		return openenvResult{}, "", err
	}
	t := s.task(rt)
	opt := obsOptions{pixels: size, encoding: encodingJSON}
	if id != "" {
		e, err := s.lookup(id)
		if err == nil {
			return s.openenvResetLive(e, t, opt)
		}
		if req.EpisodeID != nil {
			err.Field = "episode_id"
			return openenvResult{}, "", err
		}
	}
	if err := s.admit(1); err != nil {
		return openenvResult{}, "", err
	}
	e := s.newEpisode(t, opt, "")
	s.episodes.insert(e.id, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	return openenvResult{Observation: s.openenvObserve(e, nil)}, e.id, nil
}

// openenvResetLive starts t in the live episode e (locked by lookup).
func (s *Server) openenvResetLive(e *episode, t *env.Task, opt obsOptions) (openenvResult, string, *apiError) {
	defer e.mu.Unlock()
	if e.vector != "" {
		return openenvResult{}, "", errorf(http.StatusConflict, "episode_id", "episode %s is a slot of vector %s", e.id, e.vector)
	}
	e.reset(t)
	e.obs = opt
	return openenvResult{Observation: s.openenvObserve(e, nil)}, e.id, nil
}

// openenvStep takes action a in episode id.
func (s *Server) openenvStep(id string, a env.Action) (openenvResult, *apiError) {
	e, err := s.openenvPlayable(id)
	if err != nil {
		return openenvResult{}, err
	}
	defer e.mu.Unlock()
	sv := s.applyStep(e, a)
	reward := sv.Reward
	return openenvResult{Observation: s.openenvObserve(e, &sv), Reward: &reward, Done: sv.Done}, nil
}

// openenvPlayable looks up episode id (locked) and checks it can take a step.
func (s *Server) openenvPlayable(id string) (*episode, *apiError) {
	if id == "" {
		return nil, errorf(http.StatusConflict, "episode_id", "no episode yet: reset the session first")
	}
	e, err := s.lookup(id)
	if err != nil {
		err.Field = "episode_id"
		return nil, err
	}
	if e.vector != "" {
		e.mu.Unlock()
		return nil, errorf(http.StatusConflict, "episode_id", "episode %s is a slot of vector %s: POST /v1/vectors/%s/step steps it", e.id, e.vector, e.vector)
	}
	if e.env.Done() {
		n := e.steps
		e.mu.Unlock()
		return nil, errorf(http.StatusConflict, "episode_id", "episode %s is over after %d steps; reset it", id, n)
	}
	return e, nil
}

// openenvObserve is e's observation after step sv (nil: after a reset).
func (s *Server) openenvObserve(e *episode, sv *stepView) openenvObservation {
	mask := make([]bool, env.NumActions())
	e.env.ActionMask(mask)
	o := openenvObservation{
		EpisodeID: e.id, Task: publicTask(e.task), Step: e.steps, MaxSteps: s.envCfg.MaxSteps,
		Done: e.env.Done(), Region: rectJSON(e.region), AllowedActions: allowed(mask), stepView: sv,
	}
	o.Content = []mcpContent{{Type: "text", Text: observationText(e.task, sv)}, s.viewImage(e)}
	return o
}

// observationText is the text content: the question after a reset, the
// operation and what it returned after a step.
func observationText(t *env.Task, sv *stepView) string {
	if sv == nil {
		return t.Question
	}
	var b strings.Builder
	b.WriteString(sv.Action)
	switch {
	case sv.Parameters.X != nil && sv.Parameters.Y != nil:
		fmt.Fprintf(&b, "(%d, %d)", *sv.Parameters.X, *sv.Parameters.Y)
	case sv.Parameters.Answer != "":
		fmt.Fprintf(&b, "(%q)", sv.Parameters.Answer)
	}
	if sv.Result.Summary != "" {
		b.WriteString(": " + sv.Result.Summary)
	}
	if f := sv.Finish; f != nil {
		fmt.Fprintf(&b, " (episode over: correct %t)", f.Correct)
	}
	return b.String()
}

// viewImage is e's current view (frame 0, as view.png sends it) at the
// session's image size, as MCP image content.
func (s *Server) viewImage(e *episode) mcpContent {
	var buf bytes.Buffer
	if err := pngEncoder.Encode(&buf, render(e.task.Frames[0], e.region, e.obs.pixels)); err != nil {
		return mcpContent{Type: "text", Text: "the view could not be encoded: " + err.Error()}
	}
	return mcpContent{Type: "image", Data: base64.StdEncoding.EncodeToString(buf.Bytes()), MimeType: "image/png"}
}

// openenvState is OpenEnv's state: its episode_id and step_count, and the
// episode's task and progress.
type openenvState struct {
	EpisodeID *string   `json:"episode_id"`
	StepCount int       `json:"step_count"`
	SessionID string    `json:"session_id,omitempty"`
	Task      *taskView `json:"task,omitempty"`
	Done      bool      `json:"done"`
	MaxSteps  int       `json:"max_steps"`
}

// openenvStateOf describes episode id ("": none yet).
func (s *Server) openenvStateOf(id string) (openenvState, *apiError) {
	st := openenvState{MaxSteps: s.envCfg.MaxSteps}
	if id == "" {
		return st, nil
	}
	e, err := s.lookup(id)
	if err != nil {
		err.Field = "episode_id"
		return st, err
	}
	defer e.mu.Unlock()
	t := publicTask(e.task)
	st.EpisodeID, st.StepCount, st.Task, st.Done = &e.id, e.steps, &t, e.env.Done()
	return st, nil
}

// openenvAction is an action as OpenEnv's clients send it: serve's step
// request ({op, x, y}, {op, answer}, {op} or {index}), or one of OpenEnv's
// MCP actions ({"type": "list_tools"}, {"type": "call_tool", "tool_name",
// "arguments"}).
type openenvAction struct {
	actionSpec
	Metadata  map[string]any  `json:"metadata,omitempty"` // OpenEnv's Action base carries it; unused
	Type      *string         `json:"type,omitempty"`
	ToolName  *string         `json:"tool_name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MCP action types of OpenEnv's step.
const (
	actionListTools = "list_tools"
	actionCallTool  = "call_tool"
)

// openenvStepAction plays a step's action in episode id: an operation, or
// an MCP action answered with OpenEnv's tool observations.
func (s *Server) openenvStepAction(id string, data []byte) (openenvResult, *apiError) {
	var act openenvAction
	if err := decodeJSON(data, &act, false); err != nil {
		return openenvResult{}, prefixField(err, "action.")
	}
	if act.Type == nil {
		if act.ToolName != nil || act.Arguments != nil {
			return openenvResult{}, badField("action.type", "tool_name and arguments belong to {\"type\": %q}", actionCallTool)
		}
		a, err := act.action("action.")
		if err != nil {
			return openenvResult{}, err
		}
		return s.openenvStep(id, a)
	}
	if act.Op != nil || act.Index != nil || act.X != nil || act.Y != nil || act.Answer != nil {
		return openenvResult{}, badField("action.type", "an MCP action carries no op, index, x, y or answer")
	}
	switch *act.Type {
	case actionListTools:
		if act.ToolName != nil || act.Arguments != nil {
			return openenvResult{}, badField("action.tool_name", "%s takes no tool_name or arguments", actionListTools)
		}
		return openenvResult{Observation: map[string]any{"tools": openenvTools()}}, nil
	case actionCallTool:
		if act.ToolName == nil {
			return openenvResult{}, badField("action.tool_name", "required for %s", actionCallTool)
		}
		res, done, reward, err := s.callTool(id, *act.ToolName, act.Arguments, "action.")
		if err != nil {
			return openenvResult{}, err
		}
		obs := map[string]any{"tool_name": *act.ToolName, "result": res, "error": nil}
		return openenvResult{Observation: obs, Reward: reward, Done: done}, nil
	}
	return openenvResult{}, badField("action.type", "unknown action type %q (want %s or %s, or no type and an op)", *act.Type, actionListTools, actionCallTool)
}

// prefixField puts path in front of the field an error names.
func prefixField(err *apiError, path string) *apiError {
	if err.Field != "" && err.Field != "body" {
		err.Message = path + err.Message
		err.Field = path + err.Field
	}
	return err
}

func (s *Server) handleOpenEnvHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "healthy"})
}

func (s *Server) handleOpenEnvMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{
		"name":        "pixelis",
		"description": "pixel-space visual reasoning: answer a question about an image by segmenting, zooming, reading and tracking in its pixels",
		"version":     APIVersion,
	})
}

func (s *Server) handleOpenEnvReset(w http.ResponseWriter, r *http.Request) {
	var req openenvResetRequest
	if err := decodeBody(w, r, &req, maxSmallBody, true); err != nil {
		writeError(w, err)
		return
	}
	id := ""
	if req.EpisodeID != nil {
		id = *req.EpisodeID
	}
	res, _, err := s.openenvReset(id, req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// openenvStepRequest is the body of POST /openenv/step: OpenEnv's step
// request with the episode it steps.
type openenvStepRequest struct {
	Action    json.RawMessage `json:"action"`
	EpisodeID *string         `json:"episode_id"`
	TimeoutS  *float64        `json:"timeout_s,omitempty"`  // OpenEnv's; a step never waits
	RequestID *string         `json:"request_id,omitempty"` // OpenEnv's; unused
}

func (s *Server) handleOpenEnvStep(w http.ResponseWriter, r *http.Request) {
	var req openenvStepRequest
	if err := decodeBody(w, r, &req, maxSmallBody, false); err != nil {
		writeError(w, err)
		return
	}
	if req.Action == nil {
		writeError(w, badField("action", "required"))
		return
	}
	if req.EpisodeID == nil {
		writeError(w, badField("episode_id", "required over HTTP: the episode_id of POST /openenv/reset's observation (or play over the WebSocket, /openenv/ws)"))
		return
	}
	res, err := s.openenvStepAction(*req.EpisodeID, req.Action)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleOpenEnvState(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("episode_id")
	if id == "" {
		writeError(w, badField("episode_id", "required over HTTP (?episode_id=…)"))
		return
	}
	st, err := s.openenvStateOf(id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
