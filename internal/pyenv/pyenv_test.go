package pyenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skipf and Fatalf instead of ending
// the test, so that what Python does with a failed build can be seen.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// With the package index unreachable (a refused loopback port in its place,
// an empty cache), a test that needs a stack skips outside CI, saying why,
// and fails under CI=true. An unknown stack fails either way.
func TestPythonSkipsOutsideCIAndFailsUnderCI(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PIP_INDEX_URL", "http://127.0.0.1:1/simple")
	t.Setenv("PIP_FIND_LINKS", "")
	t.Setenv("PIP_RETRIES", "1") // one retry: pip says why it retries, and fast
	t.Setenv("UV_DEFAULT_INDEX", "http://127.0.0.1:1/simple")
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			r := &recorder{TB: t}
			if py := Python(r, "trl"); py != "" {
				t.Fatalf("Python returned %q with the index unreachable", py)
			}
			got, other := r.skipped, r.failed
			if ci == "true" {
				got, other = r.failed, r.skipped
			}
			if !strings.Contains(got, "could not be reached") || other != "" {
				t.Fatalf("CI=%q: skipped %q, failed %q; want the unreachable index named, by a skip only outside CI", ci, r.skipped, r.failed)
			}
			r = &recorder{TB: t}
			Python(r, "no-such-stack")
			if !strings.Contains(r.failed, "no-such-stack") || r.skipped != "" {
				t.Fatalf("CI=%q, an unknown stack: skipped %q, failed %q; want a failure", ci, r.skipped, r.failed)
			}
		})
	}
}
