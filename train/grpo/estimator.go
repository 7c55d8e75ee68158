package grpo

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pixelis/pixelis/configs"
)

// Estimator is one advantage estimator of rft.estimator: how a step's
// rewards become the advantages the policy loss weighs its actions by. The
// table below is the one list of them; configs checks rft.estimator against
// it, the runner estimates with it, the memory estimate asks it whether a
// critic is trained.
type Estimator struct {
	Name string
	// Doc is the estimator's formula in one line.
	Doc string
	// Critic says the estimator needs a value function V(s_t): the runner
	// trains [rft.critic] beside the policy and fills Input.Values.
	Critic bool
	// GroupBaseline says rft.advantage's group baseline ("grpo" mean or
	// "rloo") and rft.scale_rewards apply; the other estimators ignore them.
	GroupBaseline bool
	// Estimate computes the advantages of one step's kept trajectories.
	Estimate func(Input) (Advantage, error)
}

// Input is what an estimator may use: per trajectory its total reward and
// its reward per step (Σ_t Steps[i][t] = Totals[i]), the critic's values of
// its states when the estimator has one, and the [rft] settings.
type Input struct {
	Totals    []float64
	Steps     [][]float64
	Values    [][]float64 // V(s_t) per action; nil without a critic
	GroupSize int
	Baseline  Baseline
	Scale     Scale
	Gamma     float64 // discount
	Lambda    float64 // GAE's λ
}

// Advantage is an estimator's answer.
type Advantage struct {
	// Steps is each action's advantage, per trajectory.
	Steps [][]float64
	// Returns are the per-action regression targets: GAE's λ-returns (ppo),
	// the discounted returns (reinforce++), and for grpo, as verl logs them,
	// the advantages themselves.
	Returns [][]float64
	// PerTraj is set when every action of a trajectory shares one advantage
	// (GRPO's Âᵢ), with the group statistics in Stats; otherwise the runner
	// derives both from Steps.
	PerTraj []float64
	Stats   AdvantageStats
}

// The estimators' names.
const (
	EstimatorGRPO        = "grpo"
	EstimatorReinforcePP = "reinforce++"
	EstimatorPPO         = "ppo"
)

// estimators is the table, the default first.
var estimators = []Estimator{
	{Name: EstimatorGRPO, GroupBaseline: true, Estimate: estimateGRPO,
		Doc: "Âᵢ = (Rᵢ − mean_g R)/s for every action of trajectory i (rft.advantage = \"rloo\" leaves the sample out of the mean)"},
	{Name: EstimatorReinforcePP, Estimate: estimateReinforcePP,
		Doc: "G_t = r_t + γ·G_{t+1};  Â_t = whiten_batch(G_t)"},
	{Name: EstimatorPPO, Critic: true, Estimate: estimatePPO,
		Doc: "Â_t = GAE(r, V; γ, λ), whitened over the batch; the critic regresses V(s_t) on R_t = Â_t + V(s_t)"},
}

func init() { configs.SetEstimators(estimatorNames) }

// estimatorNames are the names of the table and, of them, those with a group baseline.
func estimatorNames() (names, grouped []string) {
	for _, e := range estimators {
		names = append(names, e.Name)
		if e.GroupBaseline {
			grouped = append(grouped, e.Name)
		}
	}
	return names, grouped
}

// Estimators returns the table.
func Estimators() []Estimator { return slices.Clone(estimators) }

// LookupEstimator returns the estimator named name.
func LookupEstimator(name string) (Estimator, bool) {
	i := slices.IndexFunc(estimators, func(e Estimator) bool { return e.Name == name })
	if i < 0 {
		return Estimator{}, false
	}
	return estimators[i], true
}

// RegisterEstimator adds an estimator to the table and returns the function
// that removes it again. Call it before any config is loaded (from an init
// function, or at the start of a test).
func RegisterEstimator(e Estimator) (unregister func(), err error) {
	if e.Name == "" || e.Estimate == nil {
		return nil, errors.New("grpo: an estimator needs a name and an Estimate function")
	}
	if _, ok := LookupEstimator(e.Name); ok {
		return nil, fmt.Errorf("grpo: an estimator named %q is registered already", e.Name)
	}
	estimators = append(estimators, e)
	return func() {
		estimators = slices.DeleteFunc(estimators, func(x Estimator) bool { return x.Name == e.Name })
	}, nil
}

// estimateGRPO is the group-relative advantage, one per trajectory.
func estimateGRPO(in Input) (Advantage, error) {
	adv, st, err := Advantages(in.Totals, in.GroupSize, in.Baseline, in.Scale)
	if err != nil {
		return Advantage{}, err
	}
	out := Advantage{PerTraj: adv, Stats: st, Steps: make([][]float64, len(adv))}
	for i := range adv {
		out.Steps[i] = make([]float64, len(in.Steps[i]))
		for t := range out.Steps[i] {
			out.Steps[i][t] = adv[i]
		}
	}
	out.Returns = out.Steps
	return out, nil
}

// estimateReinforcePP whitens the discounted returns over the batch.
func estimateReinforcePP(in Input) (Advantage, error) {
	out := Advantage{Returns: make([][]float64, len(in.Steps))}
	for i, r := range in.Steps {
		out.Returns[i] = DiscountedReturns(r, in.Gamma)
	}
	out.Steps = Whiten(out.Returns)
	return out, nil
}

// estimatePPO whitens GAE over the batch.
func estimatePPO(in Input) (Advantage, error) {
	out := Advantage{Returns: make([][]float64, len(in.Steps))}
	gae := make([][]float64, len(in.Steps))
	for i, r := range in.Steps {
		gae[i], out.Returns[i] = GAE(r, in.Values[i], in.Gamma, in.Lambda)
	}
	out.Steps = Whiten(gae)
	return out, nil
}
