// Package suggest finds the name a user probably meant when they typed one
// that does not exist: a flag, a config key or a built-in config's name.
package suggest

// Closest is the name of names nearest to typed, when it is near enough to be
// a slip of the keyboard: at most one edit (a letter added, dropped, changed,
// or two neighbours swapped) for a name of up to four letters, two for a
// longer one. It returns "" when no name is that near, or typed is one of
// names. Of two names as near, the first in names wins.
func Closest(typed string, names []string) string {
	limit := 2
	if len([]rune(typed)) <= 4 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, n := range names {
		if n == typed {
			return ""
		}
		if d := Distance(typed, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Distance is the number of edits that turn a into b, counting a letter
// added, dropped or changed, or two neighbouring letters swapped, as one
// (the optimal string alignment distance).
func Distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// Rows i-2, i-1 and i of the table whose cell j is the distance between
	// s[:i] and t[:j].
	prev2, prev, cur := make([]int, len(t)+1), make([]int, len(t)+1), make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
