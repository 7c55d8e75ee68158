// Package chat writes CoTA samples and their tasks as chat conversations with
// images, the form vision-language trainers read (TRL's SFTTrainer and
// GRPOTrainer through the datasets library): the pixel operations are the
// assistant's tool calls, what they measured comes back as tool messages, with
// the new view as an image whenever the operation changed it, and the answer
// is the assistant's last message.
//
// A directory written by Write holds
//
//	conversations.jsonl  one CoTA trajectory a line: messages, images (SFT)
//	tasks.jsonl          one task a line: its prompt and first image (GRPO, eval)
//	images/ID-K.png      the K-th image of conversation ID, the 64×64 view
//
// Image paths are relative to the directory. Every message's content is a list
// of parts ({"type": "text", "text": …} or {"type": "image"}, the image being
// the next entry of the row's images), so that every row has the same schema
// whatever its steps; a tool call's arguments are a JSON object in a string
// for the same reason (an object's keys differ between operations).
package chat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"github.com/pixelis/pixelis/train/env"
)

// File and directory names of a written directory.
const (
	ConversationsFile = "conversations.jsonl"
	TasksFile         = "tasks.jsonl"
	ImagesDir         = "images"
)

// SystemPrompt opens every conversation and task prompt. The tools'
// signatures are not in it: a chat template renders them from the tools the
// trainer passes.
const SystemPrompt = "Answer the question about the image with one word or number. " +
	"Call the tools to look closer: x and y are pixels of the 64×64 view, the first image. " +
	"Once you know the answer, reply with the answer alone."

// Part is one piece of a message's content: text, or an image whose pixels
// are the row's next entry of Images.
type Part struct {
	Type string `json:"type"` // "text" or "image"
	Text string `json:"text,omitempty"`
}

// Function names an operation and its arguments.
type Function struct {
	Name string `json:"name"`
	// Arguments is a JSON object, as text: {"x": 28, "y": 20} or {}.
	Arguments string `json:"arguments"`
}

// ToolCall is one operation the assistant calls.
type ToolCall struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Message is one turn of a conversation.
type Message struct {
	Role      string     `json:"role"` // system, user, assistant or tool
	Content   []Part     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Name is the operation a tool message answers.
	Name string `json:"name,omitempty"`
	// CoTARole is what imitation does with an assistant turn (the CoTA step's
	// role): "imitate", "skip" (a fair try that turned out wrong) or "avoid"
	// (a mistake). Chat templates ignore it; an SFT collator reads it.
	CoTARole string `json:"cota_role,omitempty"`
}

// Conversation is one CoTA trajectory as a chat, with the task it plays.
type Conversation struct {
	ID          string    `json:"id"`
	Split       string    `json:"split"`
	Index       int       `json:"index"`
	Seed        uint64    `json:"seed"`
	TaskType    string    `json:"task_type"`
	SampleType  string    `json:"sample_type"`
	Difficulty  string    `json:"difficulty"`
	GroundTruth string    `json:"ground_truth"`
	Messages    []Message `json:"messages"`
	Images      []string  `json:"images"` // paths relative to the directory, in order of appearance
}

// Task is a task's prompt: what a policy sees before its first turn. It
// carries no answer: serve (split, index) scores what the policy does.
type Task struct {
	ID         string    `json:"id"`
	Split      string    `json:"split"`
	Index      int       `json:"index"`
	Seed       uint64    `json:"seed"`
	TaskType   string    `json:"task_type"`
	Difficulty string    `json:"difficulty"`
	Prompt     []Message `json:"prompt"`
	Images     []string  `json:"images"`
}

// Prompt is a task's prompt: the system prompt, then the user's turn, the
// task's first view (the image part) and its question.
func Prompt(question string) []Message {
	return []Message{
		{Role: "system", Content: []Part{{Type: "text", Text: SystemPrompt}}},
		{Role: "user", Content: []Part{{Type: "image"}, {Type: "text", Text: question}}},
	}
}

// picture is one image of a conversation, before it is written.
type picture struct {
	path string
	img  image.Image
}

// convert replays sample s in ep (its task regenerated under cfg, the config
// it was generated with) and returns it as a conversation, its task's prompt
// and the images both refer to.
func convert(ep *env.Episode, cfg env.Config, s env.Sample) (Conversation, Task, []picture, error) {
	t, actions, roles, err := s.Replay(cfg)
	if err != nil {
		return Conversation{}, Task{}, nil, err
	}
	ep.Reset(t)
	pics := []picture{{imagePath(s.SampleID, 0), ep.ViewImage()}}
	prompt := Prompt(s.Question)
	msgs := append([]Message(nil), prompt...)
	for i, a := range actions {
		role := roles[i].String()
		if a.Op == env.OpAnswer {
			msgs = append(msgs, Message{Role: "assistant", Content: []Part{{Type: "text", Text: a.Answer}}, CoTARole: role})
			ep.Step(a)
			continue
		}
		before := ep.Region()
		res, _ := ep.Step(a)
		if want := s.Trajectory[i].Result.Summary; res.Summary != want {
			return Conversation{}, Task{}, nil, fmt.Errorf("sample %s step %d: replayed %s gives %q, the sample says %q", s.SampleID, i+1, a.Op, res.Summary, want)
		}
		name := a.Op.String()
		msgs = append(msgs, Message{Role: "assistant", Content: []Part{}, CoTARole: role,
			ToolCalls: []ToolCall{{Type: "function", Function: Function{Name: name, Arguments: arguments(a)}}}})
		content := []Part{{Type: "text", Text: res.Summary}}
		if ep.Region() != before {
			pics = append(pics, picture{imagePath(s.SampleID, len(pics)), ep.ViewImage()})
			content = append(content, Part{Type: "image"})
		}
		msgs = append(msgs, Message{Role: "tool", Name: name, Content: content})
	}
	conv := Conversation{ID: s.SampleID, Split: s.Split, Index: s.Index, Seed: s.Seed, TaskType: s.TaskType,
		SampleType: s.SampleType, Difficulty: s.Difficulty, GroundTruth: s.GroundTruth, Messages: msgs}
	for _, p := range pics {
		conv.Images = append(conv.Images, p.path)
	}
	task := Task{ID: s.SampleID, Split: s.Split, Index: s.Index, Seed: s.Seed, TaskType: s.TaskType,
		Difficulty: s.Difficulty, Prompt: prompt, Images: conv.Images[:1]}
	return conv, task, pics, nil
}

// arguments is an action's tool-call arguments as the JSON text a chat
// template's tojson renders for the same object, so that a trajectory reads
// the same whether its arguments are parsed or not.
func arguments(a env.Action) string {
	if a.Op == env.OpSegment {
		return fmt.Sprintf(`{"x": %d, "y": %d}`, a.X, a.Y)
	}
	return "{}"
}

func imagePath(id string, k int) string {
	return ImagesDir + "/" + fmt.Sprintf("%s-%d.png", id, k)
}

// Write writes samples (generated under cfg) to dir as conversations, tasks
// and images, creating dir. The JSONL files appear whole or not at all.
func Write(dir string, cfg env.Config, samples []env.Sample) error {
	if err := os.MkdirAll(filepath.Join(dir, ImagesDir), 0o755); err != nil {
		return fmt.Errorf("write chat data: %w", err)
	}
	convs, err := newJSONL(filepath.Join(dir, ConversationsFile))
	if err != nil {
		return err
	}
	defer convs.abort()
	tasks, err := newJSONL(filepath.Join(dir, TasksFile))
	if err != nil {
		return err
	}
	defer tasks.abort()
	ep := env.NewEpisode(cfg)
	for _, s := range samples {
		conv, task, pics, err := convert(ep, cfg, s)
		if err != nil {
			return fmt.Errorf("write chat data: %w", err)
		}
		for _, p := range pics {
			if err := writePNG(filepath.Join(dir, filepath.FromSlash(p.path)), p.img); err != nil {
				return err
			}
		}
		if err := convs.put(conv); err != nil {
			return err
		}
		if err := tasks.put(task); err != nil {
			return err
		}
	}
	if err := convs.commit(); err != nil {
		return err
	}
	return tasks.commit()
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write chat image: %w", err)
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("write chat image %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write chat image %s: %w", path, err)
	}
	return nil
}

// jsonl is a JSON-lines file written under a temporary name and renamed into
// place by commit.
type jsonl struct {
	path string
	f    *os.File
	w    *bufio.Writer
	enc  *json.Encoder
}

func newJSONL(path string) (*jsonl, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("write chat data: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonl{path: path, f: f, w: w, enc: enc}, nil
}

func (j *jsonl) put(v any) error {
	if err := j.enc.Encode(v); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	return nil
}

func (j *jsonl) commit() error {
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	if err := os.Rename(j.f.Name(), j.path); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	j.f = nil
	return nil
}

// abort removes the temporary file unless commit renamed it.
func (j *jsonl) abort() {
	if j.f != nil {
		j.f.Close()
		os.Remove(j.f.Name())
	}
}
