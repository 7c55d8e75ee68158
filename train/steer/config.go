package steer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/reward"
)

// The reward components the curriculum's KPIs are read from (kpiNeeds); a
// stage may weigh any weighted term of the reward registry.
const (
	componentFinal     = reward.NameFinal
	componentCoherence = reward.NameCoherence
)

// What a child reports per step besides its components' raw means.
const (
	ReportEpisodes  = "episodes"     // episodes rolled out this step
	ReportSuccesses = "successes"    // of them, the ones answered correctly
	ReportTotal     = "reward/total" // mean total reward of the step's episodes
)

// Declaration is what the child declared in its hello.
type Declaration struct {
	Components []string `json:"components"` // reward component names
	Reports    []string `json:"reports"`    // per-step reports: episodes, successes, reward/total
}

func (d Declaration) hasComponent(c string) bool { return slices.Contains(d.Components, c) }
func (d Declaration) hasReport(r string) bool    { return slices.Contains(d.Reports, r) }

func (d Declaration) String() string {
	return fmt.Sprintf("components: %s; reports: %s", listOrNone(d.Components), listOrNone(d.Reports))
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// validate checks the declaration itself: names non-empty and not repeated.
func (d Declaration) validate() error {
	var errs []error
	for what, list := range map[string][]string{"components": d.Components, "reports": d.Reports} {
		seen := map[string]bool{}
		for i, n := range list {
			switch {
			case n == "":
				errs = append(errs, fmt.Errorf("declared %s[%d]: empty name", what, i))
			case seen[n]:
				errs = append(errs, fmt.Errorf("declared %s[%d]: %q listed twice", what, i, n))
			}
			seen[n] = true
		}
	}
	return errors.Join(errs...)
}

// UndeclaredError is a curriculum field naming a KPI or a reward component
// whose inputs the child did not declare.
type UndeclaredError struct {
	Field    string      // config key, e.g. "curriculum.stages[1].exit[0].metric"
	Name     string      // what the field names: a KPI ("coherence_ma100") or a component ("coherence")
	Needs    string      // what was not declared: `reward component "coherence"`, `report "successes"`
	Declared Declaration // what was
}

func (e *UndeclaredError) Error() string {
	return fmt.Sprintf("%s: %s needs %s, which the trainer did not declare (%s)", e.Field, e.subject(), e.Needs, e.Declared)
}

// subject is what the field asks for, as the error names it.
func (e *UndeclaredError) subject() string {
	switch {
	case e.Name == "":
		return "counting samples"
	case strings.Contains(e.Field, ".weights."):
		return fmt.Sprintf("a weight ≠ 0 for %q", e.Name)
	}
	return fmt.Sprintf("KPI %q", e.Name)
}

// kpiNeeds lists, per KPI of configs.KPIs, what the child must declare for
// the tracker to get it: reports ("episodes") or components ("component:final").
var kpiNeeds = map[string][]string{
	"success_rate":   {"report:" + ReportEpisodes, "report:" + ReportSuccesses},
	"reward_final":   {"component:" + componentFinal},
	"coherence":      {"component:" + componentCoherence},
	"combined_score": {"report:" + ReportTotal},
}

// checkDeclared reports every curriculum field that needs what d lacks, in
// the section's order.
func checkDeclared(cfg *configs.Config, d Declaration) error {
	cu := cfg.Curriculum
	var errs []error
	need := func(field, name, what string) {
		kind, n, _ := strings.Cut(what, ":")
		if kind == "report" && !d.hasReport(n) || kind == "component" && !d.hasComponent(n) {
			label := "report"
			if kind == "component" {
				label = "reward component"
			}
			errs = append(errs, &UndeclaredError{Field: field, Name: name, Needs: fmt.Sprintf("%s %q", label, n), Declared: d})
		}
	}
	kpi := func(field, name string) {
		for _, base := range configs.KPIs {
			if name == configs.KPIName(base, cu.KPIWindow) {
				for _, what := range kpiNeeds[base] {
					need(field, name, what)
				}
			}
		}
	}
	if cu.RollbackMetric != "" {
		kpi("curriculum.rollback_metric", cu.RollbackMetric)
	}
	if cu.MinSamples > 0 {
		need("curriculum.min_samples", "", "report:"+ReportEpisodes)
	}
	for i, st := range cu.Stages {
		p := fmt.Sprintf("curriculum.stages[%d]", i)
		for _, c := range reward.Weighted() {
			if st.Weights[c] != 0 {
				need(p+".weights."+c, c, "component:"+c)
			}
		}
		for j, e := range st.Exit {
			if e.Kind != curriculum.CondSteps {
				kpi(fmt.Sprintf("%s.exit[%d].metric", p, j), e.Metric)
			}
		}
	}
	return errors.Join(errs...) // in the config's order
}
