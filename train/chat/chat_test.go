package chat

import (
	"bufio"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

// world is the tests' task world: every family, videos of 4 frames.
func world() env.Config {
	return env.Config{
		MaxSteps: 8, Frames: 4, MinObjects: 2, MaxObjects: 5, MinSize: 20, MaxSize: 30, MaxSpeed: 4,
		LabelProb: 0.5, Noise: 0.02, OpCap: 3, Confusion: 0.5, Families: env.AllFamilies(),
	}
}

// mix has every sample type, so that skipped and avoided steps appear.
var mix = env.Mix{Positive: 4, SelfCorrection: 1, TrapPerceptual: 1, TrapLogical: 1, OutcomeNegative: 1, Direct: 1}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

func samePixels(a image.Image, b *image.RGBA) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := range b.Rect.Dy() {
		for x := range b.Rect.Dx() {
			r, g, bl, _ := a.At(x, y).RGBA()
			c := b.RGBAAt(x, y)
			if uint8(r>>8) != c.R || uint8(g>>8) != c.G || uint8(bl>>8) != c.B {
				return false
			}
		}
	}
	return true
}

// TestWriteConversations writes a dataset and checks every row against the
// samples it came from: the trajectory's operations as tool calls in order,
// each answered by a tool message of its summary, an image placeholder for
// each image in order (the first the initial view, one more after each
// operation that moved the view), the answer as the last assistant turn, the
// CoTA roles kept, and a task prompt that is the conversation's first turns.
func TestWriteConversations(t *testing.T) {
	cfg := world()
	samples, err := env.GenerateDataset(cfg, env.Train, 60, mix)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, cfg, samples); err != nil {
		t.Fatal(err)
	}
	convs := readJSONL[Conversation](t, filepath.Join(dir, ConversationsFile))
	tasks := readJSONL[Task](t, filepath.Join(dir, TasksFile))
	if len(convs) != len(samples) || len(tasks) != len(samples) {
		t.Fatalf("%d conversations and %d tasks of %d samples", len(convs), len(tasks), len(samples))
	}
	seen := map[string]bool{}
	for i, s := range samples {
		c := convs[i]
		if c.ID != s.SampleID || c.Split != "train" || c.Index != s.Index || c.GroundTruth != s.GroundTruth {
			t.Fatalf("conversation %d is %s %s/%d (truth %q), sample %s", i, c.ID, c.Split, c.Index, c.GroundTruth, s.SampleID)
		}
		checkConversation(t, dir, cfg, s, c)
		task := tasks[i]
		if task.ID != s.SampleID || !slices.EqualFunc(task.Prompt, c.Messages[:2], sameMessage) || !slices.Equal(task.Images, c.Images[:1]) {
			t.Fatalf("task %d: %+v is not the first turns of its conversation", i, task)
		}
		for _, m := range c.Messages {
			if m.CoTARole != "" {
				seen[m.CoTARole] = true
			}
		}
	}
	for _, r := range []string{"imitate", "skip", "avoid"} {
		if !seen[r] {
			t.Errorf("no assistant turn has cota_role %q in %d conversations of every sample type", r, len(convs))
		}
	}
}

func sameMessage(a, b Message) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func checkConversation(t *testing.T, dir string, cfg env.Config, s env.Sample, c Conversation) {
	t.Helper()
	msgs := c.Messages
	if msgs[0].Role != "system" || msgs[0].Content[0].Text != SystemPrompt || msgs[1].Role != "user" ||
		msgs[1].Content[0].Type != "image" || msgs[1].Content[1].Text != s.Question {
		t.Fatalf("%s: prompt %+v", s.SampleID, msgs[:2])
	}
	images := 0
	k := 2
	for j, st := range s.Trajectory {
		call := msgs[k]
		role := st.Role
		if role == "" {
			role = "imitate"
		}
		if call.Role != "assistant" || call.CoTARole != role {
			t.Fatalf("%s step %d: message %+v, want the assistant's turn with role %s", s.SampleID, j+1, call, role)
		}
		if st.Action == "ANSWER" {
			if len(call.ToolCalls) != 0 || len(call.Content) != 1 || call.Content[0].Text != st.Parameters.Answer {
				t.Fatalf("%s: answer turn %+v, want %q", s.SampleID, call, st.Parameters.Answer)
			}
			k++
			continue
		}
		var args map[string]int
		if len(call.ToolCalls) != 1 || call.ToolCalls[0].Function.Name != st.Action ||
			json.Unmarshal([]byte(call.ToolCalls[0].Function.Arguments), &args) != nil {
			t.Fatalf("%s step %d: tool calls %+v, want one %s", s.SampleID, j+1, call.ToolCalls, st.Action)
		}
		if st.Parameters.X != nil && (args["x"] != *st.Parameters.X || args["y"] != *st.Parameters.Y || len(args) != 2) {
			t.Fatalf("%s step %d: arguments %s, want x %d y %d", s.SampleID, j+1, call.ToolCalls[0].Function.Arguments, *st.Parameters.X, *st.Parameters.Y)
		}
		res := msgs[k+1]
		if res.Role != "tool" || res.Name != st.Action || res.Content[0].Text != st.Result.Summary {
			t.Fatalf("%s step %d: tool message %+v, want %s's %q", s.SampleID, j+1, res, st.Action, st.Result.Summary)
		}
		zoomed := st.Action == "ZOOM_IN" && st.Result.Misuse == ""
		if hasImage := len(res.Content) == 2 && res.Content[1].Type == "image"; hasImage != zoomed {
			t.Fatalf("%s step %d: %s (misuse %q) answered with an image: %v", s.SampleID, j+1, st.Action, st.Result.Misuse, hasImage)
		}
		if zoomed {
			images++
		}
		k += 2
	}
	if k != len(msgs) {
		t.Fatalf("%s: %d messages, %d from the trajectory", s.SampleID, len(msgs), k)
	}
	if len(c.Images) != images+1 {
		t.Fatalf("%s: %d images, want %d", s.SampleID, len(c.Images), images+1)
	}
	task, err := s.Task(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ep := env.NewEpisode(cfg)
	ep.Reset(task)
	if !samePixels(readPNG(t, filepath.Join(dir, c.Images[0])), ep.ViewImage()) {
		t.Fatalf("%s: the first image is not the task's initial view", s.SampleID)
	}
	for _, p := range c.Images {
		if b := readPNG(t, filepath.Join(dir, p)).Bounds(); b.Dx() != env.ViewSize || b.Dy() != env.ViewSize {
			t.Fatalf("%s: %s is %v, want the %d-pixel view", s.SampleID, p, b, env.ViewSize)
		}
	}
}

// TestWriteRefusesAnotherWorld: samples written under another config fail to
// replay, naming the sample, and no conversations file is left behind.
func TestWriteRefusesAnotherWorld(t *testing.T) {
	cfg := world()
	samples, err := env.GenerateDataset(cfg, env.Train, 4, env.Mix{Positive: 1})
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.MaxObjects = 3
	dir := t.TempDir()
	err = Write(dir, other, samples)
	if err == nil {
		t.Fatal("samples of another world were written")
	}
	t.Log(err)
	for _, name := range []string{ConversationsFile, TasksFile} {
		if _, serr := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(serr) {
			t.Errorf("%s left behind after the failed write (%v)", name, serr)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
