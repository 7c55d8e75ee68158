package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"smoke", "smoke", 0}, {"smok", "smoke", 1}, {"no-tiu", "no-tui", 1},
		{"grup_size", "group_size", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}, {"ab", "ba", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	flags := []string{"config", "set", "run-dir", "no-tui", "seed"}
	for _, c := range []struct {
		typed string
		names []string
		want  string
	}{
		{"smok", []string{"default", "smoke"}, "smoke"},
		{"no-tiu", flags, "no-tui"},
		{"notui", flags, "no-tui"},
		{"sed", flags, "set"},       // as near as seed: the first listed
		{"bogus", flags, ""},        // nothing near
		{"cfg", flags, ""},          // 3 edits from config
		{"run-dir", flags, ""},      // exists: nothing to suggest
		{"sx", []string{"set"}, ""}, // short: one edit only, this is two
		{"grup_size", []string{"group_size", "grpo"}, "group_size"},
	} {
		if got := Closest(c.typed, c.names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}
