package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// RecordFile is the launched run's record in its run directory: what was
// launched, where, and how it resumes.
const RecordFile = "launch.json"

// Record is launch.json.
type Record struct {
	// Cmd is the command as given, Path where it was found.
	Cmd  string   `json:"cmd"`
	Path string   `json:"path"`
	Args []string `json:"args"`
	Cwd  string   `json:"cwd"`
	// ResumeArgs is the template of the arguments a resume appends to Args,
	// "{checkpoint}" standing for the newest acknowledged checkpoint's path;
	// "" when the trainer has no way to resume (a resume starts it over).
	ResumeArgs string    `json:"resume_args"`
	Started    time.Time `json:"started"`
	// Fork is set for a fork of another launched run: where it came from.
	Fork *Fork `json:"fork,omitempty"`
}

// Fork is where a forked run came from: its parent's run directory, the
// checkpoint the parent's trainer saved for it at Step, and the edits the
// fork's trainer is sent after its hello when it starts from that
// checkpoint (its own checkpoints keep them after).
type Fork struct {
	Parent     string                 `json:"parent"`
	Step       int                    `json:"step"`
	Checkpoint string                 `json:"checkpoint"`
	Edits      []telemetry.FieldValue `json:"edits,omitempty"`
}

// WriteRecord writes r as runDir's launch.json.
func WriteRecord(runDir string, r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(runDir, RecordFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(runDir, RecordFile))
}

// ReadRecord reads runDir's launch.json; an error wrapping os.ErrNotExist
// when runDir holds no launched run.
func ReadRecord(runDir string) (Record, error) {
	var r Record
	b, err := os.ReadFile(filepath.Join(runDir, RecordFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(runDir, RecordFile), err)
	}
	if r.Cmd == "" {
		return r, fmt.Errorf("%s: no cmd", filepath.Join(runDir, RecordFile))
	}
	return r, nil
}

// Placeholder is what a resume template's {checkpoint} stands for.
const Placeholder = "{checkpoint}"

// ResumeArgs splits a resume template into arguments as a shell would
// (spaces separate, single and double quotes group, a backslash escapes
// the next character outside single quotes) and fills every {checkpoint}
// with path.
func ResumeArgs(template, path string) ([]string, error) {
	words, err := SplitWords(template)
	if err != nil {
		return nil, err
	}
	for i, w := range words {
		words[i] = strings.ReplaceAll(w, Placeholder, path)
	}
	return words, nil
}

// CheckTemplate refuses a resume template that does not split or never
// names {checkpoint}.
func CheckTemplate(template string) error {
	if template == "" {
		return nil
	}
	if _, err := SplitWords(template); err != nil {
		return err
	}
	if !strings.Contains(template, Placeholder) {
		return fmt.Errorf("%q never names %s, the checkpoint to resume from", template, Placeholder)
	}
	return nil
}

// SplitWords splits s into words as a POSIX shell does, without expansions.
func SplitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false // inside a word
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, in = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 || escaped {
		return nil, errors.New("unterminated quote or escape in " + fmt.Sprintf("%q", s))
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// DoneFile is written to the run directory when the trainer said done and
// exited 0: its presence says the launched run finished (a Slurm job that is
// requeued after its end finds it and does not start the trainer again).
const DoneFile = "launch_done.json"

// writeDone records that the trainer finished at step.
func writeDone(runDir string, step int) error {
	b, _ := json.Marshal(struct {
		Step int       `json:"step"`
		Time time.Time `json:"time"`
	}{step, time.Now().UTC()})
	tmp := filepath.Join(runDir, DoneFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(runDir, DoneFile))
}
