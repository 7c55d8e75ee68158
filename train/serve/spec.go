package serve

import (
	_ "embed"
	"net/http"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
)

// APIVersion is the version of the HTTP API (the /v1 in its paths).
const APIVersion = "1"

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3 document of the API (docs/openapi.json is a copy).
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(openAPI)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	eps, scs := s.Live()
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "episodes": eps, "max_episodes": s.opt.MaxEpisodes, "scorers": scs, "max_scorers": s.opt.MaxScorers,
	})
}

type opSpec struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Doc  string   `json:"doc"`
}

type stageSpec struct {
	Name    string             `json:"name"`
	Weights map[string]float64 `json:"weights"`
}

// spec is GET /v1/spec: everything a client needs to drive the world.
type spec struct {
	APIVersion string   `json:"api_version"`
	ConfigHash string   `json:"config_hash"` // sha256 of the effective config as TOML
	Families   []string `json:"families"`    // in Generate's cycle order: task i is families[i mod n]
	Splits     []string `json:"splits"`
	Geometry   struct {
		SourceSize int `json:"source_size"`
		ViewSize   int `json:"view_size"`
		GridSize   int `json:"grid_size"`
		CellPixels int `json:"cell_pixels"`
	} `json:"geometry"`
	Limits struct {
		MaxSteps int `json:"max_steps"`
		OpCap    int `json:"op_cap"`
		Frames   int `json:"frames"`
	} `json:"limits"`
	Operations  []opSpec `json:"operations"`
	ActionSpace struct {
		Size              int      `json:"size"`
		FirstToolAction   int      `json:"first_tool_action"`
		FirstAnswerAction int      `json:"first_answer_action"`
		Layout            string   `json:"layout"`
		ToolOps           []string `json:"tool_ops"`
	} `json:"action_space"`
	AnswerVocab []string    `json:"answer_vocab"`
	Observation observation `json:"observation"`
	StepReward  rewardTerms `json:"step_reward"`
	Vectors     struct {
		MaxN       int      `json:"max_n"`
		Autoreset  []string `json:"autoreset"`
		MaxExperts int      `json:"max_experts"`
	} `json:"vectors"`
	Misuses []string `json:"misuses"`
	Reward  struct {
		Components []string    `json:"components"`
		Priced     []string    `json:"priced"`
		Formula    string      `json:"formula"`
		Clip       float64     `json:"clip"`
		Normalize  bool        `json:"normalize"`
		NormWindow int         `json:"norm_window"`
		NormWarmup int         `json:"norm_warmup"`
		Curiosity  string      `json:"curiosity_mode"`
		Stages     []stageSpec `json:"stages"`
	} `json:"reward"`
	Server struct {
		MaxMemoryMiB int64   `json:"max_memory_mib"`
		MaxEpisodes  int     `json:"max_episodes"`
		MaxScorers   int     `json:"max_scorers"`
		IdleTimeoutS float64 `json:"idle_timeout_s"`
		MaxItems     int     `json:"max_score_items"`
		HeldOut      string  `json:"heldout_expert,omitempty"` // why val/test expert data is handed out; absent: refused
	} `json:"server"`
}

// observation describes what a session may ask its answers to carry.
type observation struct {
	Coarse struct {
		space
		Doc    string        `json:"doc"`
		Layout env.ObsLayout `json:"layout"` // version, width, named feature groups, cell features (env.Layout)
	} `json:"coarse"`
	Pixels struct {
		DType   string `json:"dtype"`
		Shape   string `json:"shape"`
		MinSize int    `json:"min_size"`
		MaxSize int    `json:"max_size"`
		Doc     string `json:"doc"`
	} `json:"pixels"`
	Mask      space    `json:"action_mask"`
	Encodings []string `json:"encodings"`
	Default   obsSpace `json:"default"`
}

func observationSpec() observation {
	var o observation
	o.Coarse.space = space{"float32", []int{obsWidth()}}
	o.Coarse.Doc = "the coarse view: the numbers pixelis's own policy reads (env.Episode.Observe), laid out as layout says"
	o.Coarse.Layout = env.Layout()
	o.Pixels.DType, o.Pixels.Shape, o.Pixels.MinSize, o.Pixels.MaxSize = "uint8", "[size, size, 3]", minImageSize, maxImageSize
	o.Pixels.Doc = "the current view's RGB pixels resampled to size (view.png's pixels at ?size=size)"
	o.Mask = space{"bool", []int{env.NumActions()}}
	o.Encodings = []string{encodingJSON, encodingNPY}
	o.Default = defaultObs.space()
	return o
}

var opDocs = [env.NumOps]opSpec{
	{Args: []string{"x", "y"}, Doc: "segment the object at view pixel (x, y), snapping to a nearby object pixel"},
	{Args: []string{}, Doc: "colour, shape, area and centre of the last segmented object"},
	{Args: []string{}, Doc: "zoom the view onto the last segmented object's box"},
	{Args: []string{}, Doc: "read the text label in the current view"},
	{Args: []string{}, Doc: "follow the last segmented object through the frames (videos only)"},
	{Args: []string{"answer"}, Doc: "answer with a word of answer_vocab; ends the episode"},
}

func (s *Server) handleSpec(w http.ResponseWriter, r *http.Request) {
	var sp spec
	sp.APIVersion, sp.ConfigHash = APIVersion, s.cfgHash
	for _, f := range s.envCfg.Families {
		sp.Families = append(sp.Families, f.String())
	}
	for i := env.Split(0); i < env.NumSplits; i++ {
		sp.Splits = append(sp.Splits, i.String())
	}
	sp.Geometry.SourceSize, sp.Geometry.ViewSize, sp.Geometry.GridSize, sp.Geometry.CellPixels = env.SourceSize, env.ViewSize, env.GridSize, env.CellPixels
	sp.Limits.MaxSteps, sp.Limits.OpCap, sp.Limits.Frames = s.envCfg.MaxSteps, s.envCfg.OpCap, s.envCfg.Frames
	for op := env.Op(0); op < env.NumOps; op++ {
		o := opDocs[op]
		o.Name = op.String()
		sp.Operations = append(sp.Operations, o)
	}
	as := &sp.ActionSpace
	as.Size, as.FirstToolAction, as.FirstAnswerAction = env.NumActions(), env.FirstToolAction, env.FirstAnswerAction
	as.Layout = "index k < first_tool_action: SEGMENT_OBJECT_AT at the centre of grid cell k (row-major, grid_size per side) of the view; " +
		"then one index per tool_ops entry; index first_answer_action + j: ANSWER answer_vocab[j]"
	for op := env.OpProperties; op < env.OpAnswer; op++ {
		as.ToolOps = append(as.ToolOps, op.String())
	}
	sp.AnswerVocab = env.AnswerVocab
	sp.Observation, sp.StepReward = observationSpec(), s.rewardTerms()
	sp.Vectors.MaxN, sp.Vectors.MaxExperts = maxVector, maxExperts
	sp.Vectors.Autoreset = []string{autoresetNext, autoresetSame, autoresetOff}
	for m := env.Misuse(0); m < env.NumMisuses; m++ {
		sp.Misuses = append(sp.Misuses, m.String())
	}
	rw := &sp.Reward
	rw.Components = s.names
	for _, t := range reward.Terms() {
		if t.Priced {
			rw.Priced = append(rw.Priced, t.Name)
		}
	}
	rw.Formula = "total = clip(sum over weighted components c of w_c * z_c + penalty + cost, -clip, clip); " +
		"z_c = (raw_c - mean_c) / (std_c + 1e-8) over the scorer's last norm_window raw values of c " +
		"(raw_c - mean_c while it holds fewer than norm_warmup; raw_c when normalize is false)"
	rc := s.cfg.Reward
	rw.Clip, rw.Normalize, rw.NormWindow, rw.NormWarmup, rw.Curiosity = rc.Clip, rc.Normalize, rc.NormWindow, rc.NormWarmup, rc.Curiosity.Mode
	for _, st := range s.cfg.Curriculum.Stages {
		rw.Stages = append(rw.Stages, stageSpec{Name: st.Name, Weights: reward.StageWeights(st.Weights)})
	}
	sv := &sp.Server
	sv.MaxMemoryMiB = s.opt.MaxMemory >> 20
	sv.MaxEpisodes, sv.MaxScorers, sv.IdleTimeoutS, sv.MaxItems = s.opt.MaxEpisodes, s.opt.MaxScorers, s.opt.IdleTimeout.Seconds(), maxScoreItems
	sv.HeldOut = s.opt.HeldOutExpert
	writeJSON(w, http.StatusOK, sp)
}
