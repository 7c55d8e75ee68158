package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/train/env"
)

// MCP over OpenEnv: JSON-RPC 2.0 at POST /openenv/mcp (and in the
// WebSocket's {"type": "mcp"} messages), as OpenEnv's MCPToolClient speaks
// it. The tools are the five pixel operations and ANSWER, each named for its
// operation in lower case (segment_object_at, …, answer); a call takes one
// step in its session's episode and answers with MCP's CallToolResult: the
// step as text, the new view as image content, and the step's fields
// (reward and done among them) as structuredContent.

// JSON-RPC methods served: OpenEnv's session methods, MCP's.
const (
	rpcSessionCreate = "openenv/session/create"
	rpcSessionClose  = "openenv/session/close"
	rpcInitialize    = "initialize"
	rpcPing          = "ping"
	rpcToolsList     = "tools/list"
	rpcToolsCall     = "tools/call"
)

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcServerError    = -32000
)

// mcpProtocolVersion is the MCP revision initialize answers with.
const mcpProtocolVersion = "2025-06-18"

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// rpcParams are the parameters of every method served; each method
// refuses those it does not take.
type rpcParams struct {
	SessionID *string         `json:"session_id,omitempty"`
	Name      *string         `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Cursor    *string         `json:"cursor,omitempty"` // tools/list's paging; one page holds every tool
	Meta      json.RawMessage `json:"_meta,omitempty"`  // MCP's request metadata; unused
	// initialize's
	ProtocolVersion *string         `json:"protocolVersion,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	ClientInfo      json.RawMessage `json:"clientInfo,omitempty"`
}

func (s *Server) handleOpenEnvMCP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, maxSmallBody)
	if err != nil {
		writeError(w, err)
		return
	}
	resp, ok := s.rpc(body, "")
	if !ok { // a notification: no answer
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// rpc answers one JSON-RPC request; session is the WebSocket's own session
// ("" over HTTP), used when the request names none. ok is false for a
// notification (no id), which gets no answer.
func (s *Server) rpc(body []byte, session string) (resp rpcResponse, ok bool) {
	resp.JSONRPC = "2.0"
	var req rpcRequest
	if !json.Valid(body) {
		resp.Error = &rpcError{Code: rpcParseError, Message: "parse error: the body is not JSON"}
		return resp, true
	}
	if err := decodeJSON(body, &req, false); err != nil {
		resp.Error = &rpcError{Code: rpcInvalidRequest, Message: "invalid request: " + err.Message}
		return resp, true
	}
	resp.ID = req.ID
	if req.JSONRPC != "2.0" {
		resp.Error = &rpcError{Code: rpcInvalidRequest, Message: `jsonrpc: must be "2.0"`}
		return resp, true
	}
	if req.ID == nil {
		return resp, false
	}
	var p rpcParams
	if err := decodeJSON(req.Params, &p, true); err != nil {
		resp.Error = &rpcError{Code: rpcInvalidParams, Message: "params." + err.Message}
		return resp, true
	}
	if p.SessionID == nil && session != "" {
		p.SessionID = &session
	}
	resp.Result, resp.Error = s.rpcMethod(req.Method, p, session)
	return resp, true
}

// rpcMethod runs one method.
func (s *Server) rpcMethod(method string, p rpcParams, wsSession string) (any, *rpcError) {
	switch method {
	case rpcInitialize:
		return map[string]any{"protocolVersion": mcpProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]string{"name": "pixelis", "version": APIVersion}}, nil
	case rpcPing:
		return map[string]any{}, nil
	case rpcToolsList:
		return map[string]any{"tools": openenvTools()}, nil
	case rpcToolsCall:
		return s.rpcToolsCall(p)
	case rpcSessionCreate:
		if wsSession != "" {
			return map[string]string{"session_id": wsSession}, nil
		}
		o, err := s.newOpenEnvSession(false)
		if err != nil {
			return nil, &rpcError{Code: rpcServerError, Message: err.Message}
		}
		return map[string]string{"session_id": o.id}, nil
	case rpcSessionClose:
		return s.rpcSessionClose(p, wsSession)
	}
	return nil, &rpcError{Code: rpcMethodNotFound, Message: "method not found: " + method + " (served: " +
		strings.Join([]string{rpcToolsList, rpcToolsCall, rpcSessionCreate, rpcSessionClose, rpcInitialize, rpcPing}, ", ") + ")"}
}

func (s *Server) rpcToolsCall(p rpcParams) (any, *rpcError) {
	if p.Name == nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "params.name: required"}
	}
	if p.SessionID == nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "params.session_id: required (create one with " + rpcSessionCreate + ", then reset it)"}
	}
	o, aerr := s.openenvLookup(*p.SessionID)
	if aerr != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "params." + aerr.Message}
	}
	defer o.mu.Unlock()
	res, _, _, err := s.callTool(o.episode, *p.Name, p.Arguments, "params.arguments.")
	if err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: err.Message}
	}
	return res, nil
}

func (s *Server) rpcSessionClose(p rpcParams, wsSession string) (any, *rpcError) {
	if p.SessionID == nil || *p.SessionID == wsSession {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "params.session_id: required (a WebSocket's own session closes with the WebSocket)"}
	}
	o, ok := s.openenv.get(*p.SessionID)
	if !ok {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "params.session_id: no live OpenEnv session " + *p.SessionID}
	}
	o.mu.Lock()
	if o.attached {
		o.closing = true
		o.mu.Unlock()
		return map[string]any{"session_id": o.id, "closed": false, "closing": true}, nil
	}
	o.mu.Unlock()
	s.closeOpenEnvSession(o)
	return map[string]any{"session_id": o.id, "closed": true}, nil
}

// mcpTool is a tool as tools/list describes it.
type mcpTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

// toolName is the tool of operation op: its name in lower case.
func toolName(op env.Op) string { return strings.ToLower(op.String()) }

// openenvTools lists a tool per operation, from the operations' own table
// (opDocs: their arguments and what they do).
func openenvTools() []mcpTool {
	tools := make([]mcpTool, env.NumOps)
	for op := range env.NumOps {
		props, required := map[string]any{}, []string{}
		for _, a := range opDocs[op].Args {
			props[a] = argSchema(a)
			required = append(required, a)
		}
		tools[op] = mcpTool{Name: toolName(op), Description: opDocs[op].Doc,
			InputSchema: map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}}
	}
	return tools
}

// argSchema is the JSON schema of an operation's argument.
func argSchema(name string) map[string]any {
	switch name {
	case "x", "y":
		return map[string]any{"type": "integer", "description": name + " in the current view's pixels, 0 to " + strconv.Itoa(env.ViewSize-1)}
	default:
		return map[string]any{"type": "string", "description": "a word of GET /v1/spec's answer_vocab", "enum": env.AnswerVocab}
	}
}

// toolArgs are a tool call's arguments.
type toolArgs struct {
	X      *int    `json:"x,omitempty"`
	Y      *int    `json:"y,omitempty"`
	Answer *string `json:"answer,omitempty"`
}

// callTool takes the step tool name asks for in episode id and answers with
// MCP's CallToolResult. A request the tool cannot take (an unknown tool,
// wrong arguments) is an error naming the field under path; an episode that
// cannot step (none yet, over) is a result with isError, as MCP reports a
// tool's own failures.
func (s *Server) callTool(id, name string, rawArgs json.RawMessage, path string) (result map[string]any, done bool, reward *float64, err *apiError) {
	op, ok := toolOp(name)
	if !ok {
		names := make([]string, env.NumOps)
		for i := range names {
			names[i] = toolName(env.Op(i))
		}
		return nil, false, nil, badField(strings.TrimSuffix(path, "arguments.")+"name", "unknown tool %q (tools: %s)", name, strings.Join(names, ", "))
	}
	var args toolArgs
	if aerr := decodeJSON(rawArgs, &args, true); aerr != nil {
		return nil, false, nil, prefixField(aerr, path)
	}
	opName := op.String()
	spec := actionSpec{Op: &opName, X: args.X, Y: args.Y, Answer: args.Answer}
	a, aerr := spec.action(path)
	if aerr != nil {
		return nil, false, nil, aerr
	}
	res, serr := s.openenvStep(id, a)
	if serr != nil {
		return map[string]any{"content": []mcpContent{{Type: "text", Text: serr.Message}}, "isError": true}, false, nil, nil
	}
	obs := res.Observation.(openenvObservation)
	content := obs.Content
	obs.Content = nil
	return map[string]any{"content": content, "structuredContent": obs, "isError": false}, res.Done, res.Reward, nil
}

// toolOp is the operation a tool name names.
func toolOp(name string) (env.Op, bool) {
	for op := range env.NumOps {
		if toolName(op) == name {
			return op, true
		}
	}
	return 0, false
}
