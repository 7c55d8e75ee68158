package launch

import (
	"strings"
	"testing"
)

// An unknown log_keys refuses the hello, naming the field; the two known
// ones give namers whose aliases differ only in how the names are written.
func TestNamerForLogKeys(t *testing.T) {
	if _, err := namerFor("tensorboardish"); err == nil || !strings.Contains(err.Error(), "hello.log_keys") {
		t.Fatalf("err = %v, want one naming hello.log_keys", err)
	}
	tags, _ := namerFor("")
	hf, _ := namerFor(LogKeysHF)
	tagName, _ := tags.Name("train/loss")
	hfName, _ := hf.Name("loss")
	if tagName == "train/loss" || hfName != tagName {
		t.Fatalf("train/loss as a tag → %q, loss as a Trainer's log key → %q: want the same pixelis name", tagName, hfName)
	}
}
