package grpo

import "fmt"

// Aggregation is how per-action losses are averaged into one number.
type Aggregation string

const (
	TokenMean        Aggregation = "token-mean"          // Σ_all ℓ / #actions in the batch (DAPO)
	SeqMeanTokenMean Aggregation = "seq-mean-token-mean" // mean over trajectories of each one's mean (original GRPO)
	SeqMeanTokenSum  Aggregation = "seq-mean-token-sum"  // mean over trajectories of each one's sum
	DrGRPO           Aggregation = "dr-grpo"             // Σ_all ℓ / (#trajectories · max length), a constant normaliser
)

// RowWeights returns one weight per action so that Σ w·ℓ is the aggregated loss.
// lengths are the trajectories' action counts; maxLen is the episode step limit
// (Dr. GRPO's constant). Every mode is linear in the per-action losses, which is why
// one weighted sum in the graph serves them all.
func RowWeights(agg Aggregation, lengths []int, maxLen int) ([]float32, error) {
	var total int
	for _, n := range lengths {
		total += n
	}
	w := make([]float32, 0, total)
	nseq := float64(len(lengths))
	for _, n := range lengths {
		var v float64
		switch agg {
		case TokenMean:
			v = 1 / float64(total)
		case SeqMeanTokenMean:
			v = 1 / (nseq * float64(n))
		case SeqMeanTokenSum:
			v = 1 / nseq
		case DrGRPO:
			v = 1 / (nseq * float64(maxLen))
		default:
			return nil, fmt.Errorf("unknown loss aggregation %q", agg)
		}
		for i := 0; i < n; i++ {
			w = append(w, float32(v))
		}
	}
	return w, nil
}
