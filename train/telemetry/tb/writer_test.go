package tb

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pixelis/pixelis/train/telemetry"
)

func TestMaskedCRC(t *testing.T) {
	// CRC32C("123456789") is the Castagnoli check value; mask it by the TFRecord formula here.
	crc := uint32(0xe3069283)
	want := (crc>>15 | crc<<17) + 0xa282ead8
	if got := maskedCRC([]byte("123456789")); got != want || got != 0xc78ab0e5 {
		t.Errorf("maskedCRC = %#x, want %#x", got, want)
	}
}

func TestAppendRecordKnownBytes(t *testing.T) {
	// Computed independently (bitwise CRC32C): length 5 LE, masked CRC of the length,
	// "hello", masked CRC of "hello".
	want, _ := hex.DecodeString("0500000000000000" + "eab2043e" + "68656c6c6f" + "bb1f1c19")
	if got := appendRecord(nil, []byte("hello")); !bytes.Equal(got, want) {
		t.Errorf("got  %x\nwant %x", got, want)
	}
}

func TestVersionEventKnownBytes(t *testing.T) {
	// wall_time 1.5 (field 1, fixed64), step 0 (field 2, varint), file_version (field 3).
	want, _ := hex.DecodeString("09" + "000000000000f83f" + "1000" + "1a0d" + hex.EncodeToString([]byte("brain.Event:2")))
	if got := versionEvent(1.5); !bytes.Equal(got, want) {
		t.Errorf("got  %x\nwant %x", got, want)
	}
}

// The reader below is the test's own: it parses the framing, checks both checksums
// and decodes the messages field by field, sharing no code with the writer.

type readEvent struct {
	sessionStatus int
	wallTime      float64
	step          int64
	version       string
	values        []readValue
}

type readValue struct {
	tag     string
	simple  float32
	hasSimp bool
	plugin  string
	dtype   uint64
	strings [][]byte
}

func testCRC(b []byte) uint32 {
	c := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

func readRecords(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 12 {
			t.Fatalf("truncated header: %d bytes left", len(data))
		}
		n := binary.LittleEndian.Uint64(data[:8])
		if got := binary.LittleEndian.Uint32(data[8:12]); got != testCRC(data[:8]) {
			t.Fatalf("length CRC %#x, want %#x", got, testCRC(data[:8]))
		}
		data = data[12:]
		if uint64(len(data)) < n+4 {
			t.Fatalf("truncated record: need %d, have %d", n+4, len(data))
		}
		rec := data[:n]
		if got := binary.LittleEndian.Uint32(data[n : n+4]); got != testCRC(rec) {
			t.Fatalf("data CRC %#x, want %#x", got, testCRC(rec))
		}
		out = append(out, rec)
		data = data[n+4:]
	}
	return out
}

// fields calls fn for each field of a message, failing on malformed input.
func fields(t *testing.T, b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64)) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			t.Fatalf("unexpected wire type %d", typ)
		}
		if n < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		fn(num, typ, v, x)
	}
}

func decodeEvent(t *testing.T, b []byte) readEvent {
	var e readEvent
	fields(t, b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			e.wallTime = math.Float64frombits(x)
		case num == 2 && typ == protowire.VarintType:
			e.step = int64(x)
		case num == 3 && typ == protowire.BytesType:
			e.version = string(v)
		case num == 7 && typ == protowire.BytesType: // session_log (6 is the deprecated log_message)
			fields(t, v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
				if num == 1 {
					e.sessionStatus = int(x)
				}
			})
		case num == 5 && typ == protowire.BytesType:
			fields(t, v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
				if num != 1 || typ != protowire.BytesType {
					t.Fatalf("Summary field %d type %d", num, typ)
				}
				e.values = append(e.values, decodeValue(t, v))
			})
		default:
			t.Fatalf("unexpected Event field %d type %d", num, typ)
		}
	})
	return e
}

func decodeValue(t *testing.T, b []byte) readValue {
	var val readValue
	fields(t, b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
		switch num {
		case 1:
			val.tag = string(v)
		case 2:
			if typ != protowire.Fixed32Type {
				t.Fatalf("simple_value wire type %d", typ)
			}
			val.simple, val.hasSimp = math.Float32frombits(uint32(x)), true
		case 8:
			fields(t, v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
				switch num {
				case 1:
					val.dtype = x
				case 2:
					if len(v) != 0 {
						t.Errorf("text tensor shape %x, want scalar", v)
					}
				case 8:
					val.strings = append(val.strings, v)
				}
			})
		case 9:
			fields(t, v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
				if num == 1 {
					fields(t, v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) {
						if num == 1 {
							val.plugin = string(v)
						}
					})
				}
			})
		default:
			t.Fatalf("unexpected Value field %d", num)
		}
	})
	return val
}

func TestWriterReadBack(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := regexp.MatchString(`^events\.out\.tfevents\.\d{10}\.[^/]+$`, filepath.Base(w.Path())); !ok ||
		filepath.Dir(w.Path()) != filepath.Join(dir, Dir) {
		t.Errorf("file name %s", w.Path())
	}
	ts := time.Date(2026, 11, 22, 10, 42, 0, 500_000_000, time.UTC)
	want := map[int]map[string]float64{}
	for step := 1; step <= 3; step++ {
		m := map[string]float64{
			"reward/total":           float64(step) * 0.25,
			"policy/kl":              1e-3 / float64(step),
			"kpi/success_rate_ma100": 0.5 + float64(step)/10,
		}
		if step == 2 {
			m["policy/loss"] = math.NaN()
		}
		want[step] = m
		w.Record(telemetry.Point{Step: step, Phase: telemetry.PhaseRFT, Time: ts.Format(time.RFC3339Nano), Metrics: m})
	}
	sample := telemetry.Sample{Step: 3, RunStep: 23, Family: "text_extraction", Question: "What is written on the blue square?",
		Answer: "K7", GroundTruth: "K7", Correct: true, Reward: 1,
		Steps: []telemetry.SampleStep{
			{Op: "ZOOM_IN", Args: "obj 3 ×4", Result: "view 64×64", Rewards: map[string]float64{"coherence": 0.2}},
			{Op: "READ_TEXT", Result: `"K7" | 0.97`},
		}}
	snap := telemetry.Snapshot{Phase: telemetry.PhaseRFT, Step: 3, Time: ts, Samples: []telemetry.Sample{sample}}
	w.Publish(snap)
	w.Publish(snap) // same samples: no second text record
	w.Emit(telemetry.Event{Step: 3, Kind: telemetry.EventCheckpoint, Message: "checkpoint step_000003", Time: ts})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	var events []readEvent
	for _, rec := range readRecords(t, data) {
		events = append(events, decodeEvent(t, rec))
	}
	if len(events) != 2+3+1+1 {
		t.Fatalf("%d records, want version + session start + 3 steps + samples + event", len(events))
	}
	if events[0].version != "brain.Event:2" || len(events[0].values) != 0 {
		t.Errorf("first record: %+v", events[0])
	}
	if events[1].sessionStatus != 1 || events[1].step != 0 {
		t.Errorf("second record: %+v, want a SessionLog START at step 0", events[1])
	}
	events = events[1:]
	for i, e := range events[1:4] {
		checkScalars(t, i+1, e, want[i+1], float64(ts.Unix())+0.5)
	}
	md := textValue(t, events[4], "samples")
	for _, s := range []string{"text\\_extraction", "What is written on the blue square?", "| 1 | ZOOM\\_IN | obj 3 ×4 |",
		"coherence +0.20", `"K7" \| 0.97`, "answer: `K7`", "✓"} {
		if !strings.Contains(md, s) {
			t.Errorf("samples markdown lacks %q:\n%s", s, md)
		}
	}
	if events[4].step != 23 {
		t.Errorf("samples at step %d, want the run-wide 23 (3 within the phase)", events[4].step)
	}
	if got := textValue(t, events[5], "events"); got != "**checkpoint** checkpoint step\\_000003" {
		t.Errorf("event text %q", got)
	}
}

// checkScalars checks a step's record: its step, its wall time, and one simple value per metric
// recorded, NaN included.
func checkScalars(t *testing.T, step int, e readEvent, want map[string]float64, wall float64) {
	t.Helper()
	if e.step != int64(step) || e.wallTime != wall {
		t.Errorf("record %d: step %d wall %f", step, e.step, e.wallTime)
	}
	got := map[string]float64{}
	for _, v := range e.values {
		if !v.hasSimp {
			t.Errorf("step %d: %s has no simple_value", step, v.tag)
		}
		got[v.tag] = float64(v.simple)
	}
	if len(got) != len(want) {
		t.Errorf("step %d: tags %v, want %v", step, got, want)
	}
	for tag, v := range want {
		g, ok := got[tag]
		switch {
		case !ok:
			t.Errorf("step %d: %s missing", step, tag)
		case math.IsNaN(v) != math.IsNaN(g) || (!math.IsNaN(v) && float32(g) != float32(v)):
			t.Errorf("step %d: %s = %v, want %v", step, tag, g, v)
		}
	}
}

// textValue is the string of a record's one text-plugin value, which must carry tag.
func textValue(t *testing.T, e readEvent, tag string) string {
	t.Helper()
	if len(e.values) != 1 {
		t.Fatalf("text record with %d values", len(e.values))
	}
	v := e.values[0]
	if v.tag != tag || v.plugin != "text" || v.dtype != 7 || len(v.strings) != 1 || v.hasSimp {
		t.Fatalf("text value: %+v", v)
	}
	return string(v.strings[0])
}

func TestWriterNeverSharesAFile(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]bool{}
	for i := 0; i < 3; i++ {
		w, err := NewWriter(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		paths[w.Path()] = true
		w.Close()
	}
	if len(paths) != 3 {
		t.Errorf("writers opened the same file: %v", paths)
	}
}

func BenchmarkWriterRecord(b *testing.B) {
	w, err := NewWriter(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	m := map[string]float64{}
	for i := 0; i < 40; i++ {
		m[fmt.Sprintf("group/metric_%02d", i)] = float64(i)
	}
	p := telemetry.Point{Phase: telemetry.PhaseRFT, Time: "2026-11-22T10:42:00Z", Metrics: m}
	for i := 0; b.Loop(); i++ {
		p.Step = i
		w.Record(p)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

// Every file opens with a SessionLog START at the first step its run writes: a
// fresh run's at 0, a resumed one's at the step after its checkpoint.
// TensorBoard's Python loader takes a run's first START for its beginning and
// purges only at the later ones, so a fresh file without one would leave the
// first resume's values doubled.
func TestWriterOpensWithSessionStart(t *testing.T) {
	dir := t.TempDir()
	for _, from := range []int{0, 41} {
		w, err := NewWriter(dir, from)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(w.Path())
		if err != nil {
			t.Fatal(err)
		}
		recs := readRecords(t, data)
		if len(recs) != 2 {
			t.Fatalf("from %d: %d records, want version + session start", from, len(recs))
		}
		e := decodeEvent(t, recs[1])
		if e.step != int64(from) || e.sessionStatus != 1 {
			t.Fatalf("from %d: second record at step %d, status %d; want a START(1) at step %d", from, e.step, e.sessionStatus, from)
		}
	}
}

// A step's events are one text record: TensorBoard's data server keeps one
// value of a tag a step, so a record an event showed only the step's last.
func TestWriterEventsOneRecordAStep(t *testing.T) {
	w, err := NewWriter(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 22, 10, 42, 0, 0, time.UTC)
	point := func(step int) {
		w.Record(telemetry.Point{Step: step, Time: ts.Format(time.RFC3339Nano), Metrics: map[string]float64{"sft/loss": 1}})
	}
	emit := func(step int, kind, msg string) {
		w.Emit(telemetry.Event{Step: step, Kind: kind, Message: msg, Time: ts})
	}
	emit(0, telemetry.EventPhase, "run started")
	point(1)
	point(2)
	emit(2, telemetry.EventCheckpoint, "SFT model saved")
	emit(2, telemetry.EventPhase, "SFT done")
	emit(2, telemetry.EventPhase, "RFT from sft_final")
	point(3)
	emit(3, telemetry.EventEval, "val greedy 0.5")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range readRecords(t, data)[2:] {
		e := decodeEvent(t, rec)
		for _, v := range e.values {
			if v.tag == "events" {
				got = append(got, fmt.Sprintf("%d %q", e.step, v.strings[0]))
			}
		}
	}
	want := []string{
		`0 "**phase** run started"`,
		`2 "**checkpoint** SFT model saved\n\n**phase** SFT done\n\n**phase** RFT from sft\\_final"`,
		`3 "**eval** val greedy 0.5"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A resumed run's events of steps before the one it resumed at are written at
// that step: a record at an earlier step would supersede, in TensorBoard's data
// server, every event the run wrote from there on before it was resumed.
func TestResumedWriterEventsFromItsFirstStep(t *testing.T) {
	w, err := NewWriter(t.TempDir(), 16)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 22, 10, 42, 0, 0, time.UTC)
	for _, e := range []telemetry.Event{
		{Step: 0, Kind: telemetry.EventPhase, Message: "SFT: building the training set"},
		{Step: 15, Kind: telemetry.EventPhase, Message: "SFT resumed at step 15"},
		{Step: 16, Kind: telemetry.EventCheckpoint, Message: "checkpoint"},
		{Step: 17, Kind: telemetry.EventEval, Message: "val"},
	} {
		e.Time = ts
		w.Emit(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range readRecords(t, data)[2:] {
		e := decodeEvent(t, rec)
		got = append(got, fmt.Sprintf("%d %d", e.step, strings.Count(string(e.values[0].strings[0]), "**")/2))
	}
	if want := []string{"16 3", "17 1"}; !slices.Equal(got, want) {
		t.Errorf("events records (step, events): %q, want %q", got, want)
	}
}

// A resumed run whose first event file has no START (written before files
// opened with one) gets one more START before its own: TensorBoard's Python
// loader takes the first for the run's beginning and purges at the second.
// Where the first file has one, or there is none, one START is enough.
func TestResumedWriterMarksABeginningWhereNoneIs(t *testing.T) {
	starts := func(t *testing.T, runDir string) []int64 {
		t.Helper()
		w, err := NewWriter(runDir, 16)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(w.Path())
		if err != nil {
			t.Fatal(err)
		}
		var steps []int64
		for _, rec := range readRecords(t, data) {
			if e := decodeEvent(t, rec); e.sessionStatus == 1 {
				steps = append(steps, e.step)
			}
		}
		return steps
	}
	t.Run("first file without a START", func(t *testing.T) {
		runDir := t.TempDir()
		var old []byte
		old = appendRecord(old, versionEvent(1))
		old = appendRecord(old, scalarsEvent(2, 1, []scalar{{"sft/loss", 1}}))
		if err := os.MkdirAll(filepath.Join(runDir, Dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(runDir, Dir, FilePrefix+"1.host"), old, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := starts(t, runDir); !slices.Equal(got, []int64{16, 16}) {
			t.Errorf("STARTs at %v, want two at 16", got)
		}
	})
	t.Run("first file with a START", func(t *testing.T) {
		runDir := t.TempDir()
		w, err := NewWriter(runDir, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if got := starts(t, runDir); !slices.Equal(got, []int64{16}) {
			t.Errorf("STARTs at %v, want one at 16", got)
		}
	})
	t.Run("no file", func(t *testing.T) {
		if got := starts(t, t.TempDir()); !slices.Equal(got, []int64{16}) {
			t.Errorf("STARTs at %v, want one at 16", got)
		}
	})
}

// Writers opened in one second get files whose names sort as they were made:
// TensorBoard reads a directory's event files in name order, so the twelfth
// must not sort before the second.
func TestWritersInOneSecondSortInOrder(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	defer func(c func() time.Time) { fileClock = c }(fileClock)
	fileClock = func() time.Time { return at }
	dir := t.TempDir()
	var made []string
	for range 12 {
		w, err := newWriterIn(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, filepath.Base(w.Path()))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(dir) // in name order
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, made) {
		t.Fatalf("files in name order %v, made in order %v", names, made)
	}
}
