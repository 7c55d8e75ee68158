package launch

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// The refusal of a value just above MaxMagnitude names MaxMagnitude itself.
func TestMagnitudeRefusalNamesTheLimit(t *testing.T) {
	why := checkValue("reward/final/raw", math.Nextafter(MaxMagnitude, math.Inf(1)), nil)
	said, ok := strings.CutPrefix(why, "magnitude above ")
	if !ok {
		t.Fatalf("refused as %q", why)
	}
	if limit, err := strconv.ParseFloat(said, 64); err != nil || limit != MaxMagnitude {
		t.Fatalf("the refusal says %q, the limit is %g", said, MaxMagnitude)
	}
	if checkValue("reward/final/raw", MaxMagnitude, nil) != "" {
		t.Fatal("MaxMagnitude itself is refused")
	}
}
