package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

// The WebSocket session of OpenEnv's EnvClient: GET /openenv/ws upgrades,
// then each text message {"type": "reset"|"step"|"state"|"close"|"mcp",
// "data": …} gets one answer, {"type": "observation"|"state"|"mcp"|"error",
// "data": …}. A connection makes its own session (closed with it), or
// attaches to one an MCP client created (?session_id=…), which outlives it.

// wsWriteTimeout bounds writing one answer to a client that stopped reading.
const wsWriteTimeout = time.Minute

// OpenEnv's error codes (the "code" of an error answer's data).
const (
	wsInvalidJSON     = "INVALID_JSON"
	wsUnknownType     = "UNKNOWN_TYPE"
	wsValidationError = "VALIDATION_ERROR"
	wsExecutionError  = "EXECUTION_ERROR"
	wsCapacityReached = "CAPACITY_REACHED"
	wsSessionError    = "SESSION_ERROR"
)

// The types of the client's messages and of the server's answers.
const (
	wsMessageReset  = "reset"
	wsMessageStep   = "step"
	wsMessageState  = "state" // also the answer's
	wsMessageClose  = "close"
	wsMessageMCP    = "mcp" // also the answer's
	wsAnswerObserve = "observation"
	wsAnswerError   = "error"
)

// wsMaxMessageLength bounds a client's message, as serve bounds a request body.
const wsMaxMessageLength = maxSmallBody

// wsMessage is a client's message.
type wsMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// wsAnswer is the server's answer to one message.
type wsAnswer struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

func (s *Server) handleOpenEnvWS(w http.ResponseWriter, r *http.Request) {
	// Hijacking the connection clears the server's request time-outs: a
	// session lives as long as its client plays, the idle timeout bounding
	// each wait for a message (wsServe).
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the request
	}
	defer c.CloseNow()
	c.SetReadLimit(wsMaxMessageLength)
	o, owned, aerr := s.openenvAttach(r.URL.Query().Get("session_id"))
	if aerr != nil {
		s.wsWrite(c, wsError(aerr, wsSessionError))
		c.Close(websocket.StatusPolicyViolation, "no session")
		return
	}
	defer s.openenvDetach(o, owned)
	for s.wsServe(c, o) {
	}
}

// wsServe answers one message; false when the session is over.
func (s *Server) wsServe(c *websocket.Conn, o *openenvSession) bool {
	ctx, cancel := context.WithTimeout(s.ctx, s.opt.IdleTimeout)
	typ, msg, err := c.Read(ctx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			c.Close(websocket.StatusPolicyViolation, "idle for longer than the idle timeout")
		}
		return false
	}
	if typ != websocket.MessageText {
		return s.wsWrite(c, wsAnswer{wsAnswerError, map[string]string{"message": "messages are JSON text", "code": wsInvalidJSON}})
	}
	answer, more := s.wsAnswer(o, msg)
	if !more {
		c.Close(websocket.StatusNormalClosure, "")
		return false
	}
	return s.wsWrite(c, answer)
}

// wsWrite sends an answer; false when the connection is gone.
func (s *Server) wsWrite(c *websocket.Conn, a wsAnswer) bool {
	b, err := json.Marshal(a)
	if err != nil {
		b, _ = json.Marshal(wsAnswer{wsAnswerError, map[string]string{"message": "encode answer: " + err.Error(), "code": wsExecutionError}})
	}
	ctx, cancel := context.WithTimeout(s.ctx, wsWriteTimeout)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, b) == nil
}

// wsAnswer answers message msg of session o; more is false after close.
func (s *Server) wsAnswer(o *openenvSession, msg []byte) (answer wsAnswer, more bool) {
	if !json.Valid(msg) {
		return wsAnswer{wsAnswerError, map[string]string{"message": "invalid JSON", "code": wsInvalidJSON}}, true
	}
	var m wsMessage
	if err := decodeJSON(msg, &m, false); err != nil {
		return wsError(err, wsValidationError), true
	}
	if _, err := s.openenvLookup(o.id); err != nil {
		return wsError(err, wsSessionError), true
	}
	if m.Type == wsMessageMCP { // a tool call locks the session itself
		o.mu.Unlock()
		resp, _ := s.rpc(m.Data, o.id)
		return wsAnswer{wsMessageMCP, resp}, true
	}
	defer o.mu.Unlock()
	switch m.Type {
	case wsMessageReset:
		return s.wsReset(o, m.Data), true
	case wsMessageStep:
		if m.Data == nil {
			return wsError(badField("data", "required: the action"), wsValidationError), true
		}
		res, err := s.openenvStepAction(o.episode, m.Data)
		if err != nil {
			return wsError(err, ""), true
		}
		return wsAnswer{wsAnswerObserve, res}, true
	case wsMessageState, wsMessageClose:
		if m.Data != nil {
			return wsError(badField("data", "a %s message has none", m.Type), wsValidationError), true
		}
		if m.Type == wsMessageClose {
			return wsAnswer{}, false
		}
		return s.wsState(o), true
	}
	return wsAnswer{wsAnswerError, map[string]string{"message": "unknown message type " + strconv.Quote(m.Type) +
		" (want reset, step, state, close or mcp)", "code": wsUnknownType}}, true
}

// wsReset starts the task data names in o's episode (o locked).
func (s *Server) wsReset(o *openenvSession, data json.RawMessage) wsAnswer {
	var req openenvResetRequest
	if err := decodeJSON(data, &req, true); err != nil {
		return wsError(prefixField(err, "data."), wsValidationError)
	}
	if req.EpisodeID != nil {
		return wsError(badField("data.episode_id", "a WebSocket session resets its own episode"), wsValidationError)
	}
	res, id, err := s.openenvReset(o.episode, req)
	if err != nil {
		return wsError(err, "")
	}
	o.episode = id
	return wsAnswer{wsAnswerObserve, res}
}

// wsState describes o (locked) and its episode.
func (s *Server) wsState(o *openenvSession) wsAnswer {
	st, err := s.openenvStateOf(o.episode)
	if err != nil {
		return wsError(err, "")
	}
	st.SessionID = o.id
	return wsAnswer{wsMessageState, st}
}

// wsError is an error answer: code, or the one err's status implies.
func wsError(err *apiError, code string) wsAnswer {
	if code == "" {
		switch {
		case err.Status == http.StatusServiceUnavailable:
			code = wsCapacityReached
		case err.Status == http.StatusBadRequest || err.Status == http.StatusRequestEntityTooLarge:
			code = wsValidationError
		default:
			code = wsExecutionError
		}
	}
	return wsAnswer{wsAnswerError, map[string]any{"message": err.Message, "code": code, "field": err.Field, "status": err.Status}}
}

// openenvAttach is the session a connection plays: a new one it owns, or
// the live session id names, unless another connection holds it.
func (s *Server) openenvAttach(id string) (o *openenvSession, owned bool, err *apiError) {
	if id == "" {
		o, err = s.newOpenEnvSession(true)
		if err != nil {
			return nil, false, err
		}
		return o, true, nil
	}
	if o, err = s.openenvLookup(id); err != nil {
		return nil, false, err
	}
	defer o.mu.Unlock()
	if o.attached {
		return nil, false, errorf(http.StatusConflict, "session_id", "session %s already has a WebSocket", id)
	}
	o.attached = true
	return o, false, nil
}

// openenvDetach ends a connection's hold on o: an owned session closes, as
// does one an MCP client closed while the connection held it.
func (s *Server) openenvDetach(o *openenvSession, owned bool) {
	o.mu.Lock()
	o.attached = false
	closing := o.closing
	o.mu.Unlock()
	if owned || closing {
		s.closeOpenEnvSession(o)
	}
}
