package serve

import (
	"net/http"

	"github.com/pixelis/pixelis/train/env"
)

// GET /openenv/schema: OpenEnv's JSON schemas of the actions, observations
// and state, built from the operations' own table so they cannot drift.

type object = map[string]any

func (s *Server) handleOpenEnvSchema(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, object{
		"action":      actionSchema(),
		"observation": observationSchema(),
		"state":       stateSchema(),
	})
}

// actionSchema: an operation with its arguments, an index into the
// discrete action space, or one of OpenEnv's MCP actions.
func actionSchema() object {
	ops := make([]string, env.NumOps)
	for op := range env.NumOps {
		ops[op] = op.String()
	}
	meta := object{"type": "object", "description": "OpenEnv's action metadata; unused"}
	return object{
		"title": "PixelisAction",
		"oneOf": []object{
			{"type": "object", "required": []string{"op"}, "additionalProperties": false, "properties": object{
				"op": object{"type": "string", "enum": ops}, "x": argSchema("x"), "y": argSchema("y"),
				"answer": argSchema("answer"), "metadata": meta}},
			{"type": "object", "required": []string{"index"}, "additionalProperties": false, "properties": object{
				"index":    object{"type": "integer", "minimum": 0, "maximum": env.NumActions() - 1, "description": "an index of GET /v1/spec's action space"},
				"metadata": meta}},
			{"type": "object", "required": []string{"type"}, "additionalProperties": false, "properties": object{
				"type": object{"const": actionListTools}, "metadata": meta}},
			{"type": "object", "required": []string{"type", "tool_name"}, "additionalProperties": false, "properties": object{
				"type": object{"const": actionCallTool}, "tool_name": object{"type": "string"},
				"arguments": object{"type": "object"}, "metadata": meta}},
		},
	}
}

func observationSchema() object {
	ints := object{"type": "array", "items": object{"type": "integer"}}
	content := object{"type": "array", "items": object{"type": "object", "required": []string{"type"}, "properties": object{
		"type": object{"enum": []string{"text", "image"}}, "text": object{"type": "string"},
		"data": object{"type": "string", "contentEncoding": "base64"}, "mimeType": object{"const": "image/png"}}}}
	return object{
		"title": "PixelisObservation", "type": "object",
		"required": []string{"episode_id", "task", "step", "max_steps", "done", "region", "allowed_actions", "content"},
		"properties": object{
			"episode_id": object{"type": "string", "description": "the serve episode: /v1/episodes/{episode_id}"},
			"task":       object{"type": "object", "description": "id, split, index, seed, family, question, frames"},
			"step":       object{"type": "integer"}, "max_steps": object{"type": "integer"}, "done": object{"type": "boolean"},
			"region":          ints,
			"allowed_actions": ints,
			"action":          object{"type": "string", "description": "after a step: its operation"},
			"parameters":      object{"type": "object"},
			"result":          object{"type": "object", "description": "what the operation measured (CoTA result JSON)"},
			"terminated":      object{"type": "boolean"}, "truncated": object{"type": "boolean"},
			"reward_terms": object{"type": "object", "additionalProperties": object{"type": "number"}},
			"reward":       object{"type": "number"},
			"finish":       object{"type": "object", "description": "once over: answered, answer, correct, ground_truth"},
			"content":      content,
		},
	}
}

func stateSchema() object {
	return object{
		"title": "PixelisState", "type": "object", "required": []string{"episode_id", "step_count", "done", "max_steps"},
		"properties": object{
			"episode_id": object{"type": []string{"string", "null"}}, "step_count": object{"type": "integer", "minimum": 0},
			"session_id": object{"type": "string"}, "task": object{"type": "object"},
			"done": object{"type": "boolean"}, "max_steps": object{"type": "integer"},
		},
	}
}
