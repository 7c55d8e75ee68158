package tb

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb/tbtest"
)

// got is an Event as a test keeps it.
type got struct {
	Step    int64
	Wall    float64
	Restart bool
	Values  []Value
}

func collect(out *[]got) func(*Event) {
	return func(e *Event) {
		*out = append(*out, got{Step: e.Step, Wall: e.WallTime, Restart: e.Restart, Values: slices.Clone(e.Values)})
	}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t testing.TB, path string, data []byte) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// The spec encoder's CRC and framing agree with the published check value and with
// a record worked out by hand, so the fixtures below rest on the specification.
func TestSpecEncoderKnownAnswers(t *testing.T) {
	if got := tbtest.CRC32C([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("CRC-32C check value %#x, want 0xe3069283", got)
	}
	want, _ := hex.DecodeString("0500000000000000" + "eab2043e" + "68656c6c6f" + "bb1f1c19")
	if got := tbtest.Record([]byte("hello")); string(got) != string(want) {
		t.Fatalf("record %x, want %x", got, want)
	}
}

// An Event written out by hand from event.proto and summary.proto:
// wall_time 1.5, step 3, summary { value { tag "a" simple_value 0.5 } }.
func TestDecodeKnownBytes(t *testing.T) {
	ev, _ := hex.DecodeString("09" + "000000000000f83f" + // field 1, fixed64: 1.5
		"1003" + // field 2, varint: 3
		"2a0a" + // field 5 (summary), 10 bytes
		"0a08" + // field 1 (value), 8 bytes
		"0a0161" + // field 1 (tag), "a"
		"150000003f") // field 2 (simple_value), fixed32: 0.5
	if string(ev) != string(tbtest.Simple(1.5, 3, "a", 0.5)) {
		t.Fatalf("spec encoder disagrees with the hand-written bytes:\n%x\n%x", tbtest.Simple(1.5, 3, "a", 0.5), ev)
	}
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Record(ev))
	var out []got
	if n, err := NewFile(path).Read(collect(&out), nil); err != nil || n != 1 {
		t.Fatalf("Read = %d, %v", n, err)
	}
	want := []got{{Step: 3, Wall: 1.5, Values: []Value{{"a", 0.5}}}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %+v, want %+v", out, want)
	}
}

func TestReadSimpleValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), FilePrefix+"1700000000.host")
	writeFile(t, path, tbtest.Records(
		tbtest.Version(100),
		tbtest.Simple(101, 1, "train/reward", 0.25),
		tbtest.Simple(101, 1, "train/kl", 0.001),
		tbtest.Simple(102, 2, "train/reward", 0.5, "train/kl", 0.002),
		tbtest.Simple(103, 3, "train/reward", math.NaN()),
	))
	var out []got
	f := NewFile(path)
	n, err := f.Read(collect(&out), func(e *CorruptError) { t.Errorf("warning: %v", e) })
	if err != nil || n != 5 {
		t.Fatalf("Read = %d, %v; want 5 records", n, err)
	}
	want := []got{
		{Step: 0, Wall: 100},
		{Step: 1, Wall: 101, Values: []Value{{"train/reward", 0.25}}},
		{Step: 1, Wall: 101, Values: []Value{{"train/kl", float64(float32(0.001))}}},
		{Step: 2, Wall: 102, Values: []Value{{"train/reward", 0.5}, {"train/kl", float64(float32(0.002))}}},
	}
	if !reflect.DeepEqual(out[:4], want) {
		t.Fatalf("got %+v\nwant %+v", out[:4], want)
	}
	if v := out[4].Values; len(v) != 1 || !math.IsNaN(v[0].Value) {
		t.Fatalf("NaN value: %+v", v)
	}
	if f.Offset() != int64(len(mustRead(t, path))) {
		t.Fatalf("offset %d, want the file size", f.Offset())
	}
	if n, err := f.Read(collect(&out), nil); n != 0 || err != nil {
		t.Fatalf("second Read = %d, %v; want nothing new", n, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Scalar tensors as tf.summary.scalar (TF 2), SummaryWriter(new_style=True) and other
// writers produce them, and tensors that are not scalars.
func TestReadTensorScalars(t *testing.T) {
	le32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	le64 := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	cases := []struct {
		name   string
		value  []byte // Summary.Value
		want   float64
		scalar bool
	}{
		{"float_val packed, scalars plugin", tbtest.TensorValue("t", tbtest.FloatTensor(0.75), "scalars"), 0.75, true},
		{"float_val packed, no plugin", tbtest.TensorValue("t", tbtest.FloatTensor(-2), ""), -2, true},
		{"float_val unpacked", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 1), tbtest.Shape(), tbtest.Fixed32Field(5, math.Float32bits(1.25))), "scalars"), 1.25, true},
		{"double_val", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 2), tbtest.Shape(), tbtest.BytesField(6, le64(0.1))), "scalars"), 0.1, true},
		{"tensor_content float", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 1), tbtest.Shape(), tbtest.BytesField(4, le32(3.5))), "scalars"), 3.5, true},
		{"tensor_content double", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 2), tbtest.Shape(), tbtest.BytesField(4, le64(1e-9))), "scalars"), 1e-9, true},
		{"shape [1] double", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 2), tbtest.Shape(1), tbtest.BytesField(6, le64(7))), "scalars"), 7, true},
		{"half_val", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 19), tbtest.Shape(), tbtest.BytesField(13, tbtest.Varint(0x3c00))), "scalars"), 1, true},
		{"half content", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 19), tbtest.Shape(), tbtest.BytesField(4, []byte{0x00, 0xc1})), "scalars"), -2.5, true},
		{"bfloat16 half_val", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 14), tbtest.Shape(), tbtest.BytesField(13, tbtest.Varint(0x3f40))), "scalars"), 0.75, true},
		{"int64_val", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 9), tbtest.Shape(), tbtest.BytesField(10, tbtest.Varint(1234567))), "scalars"), 1234567, true},
		{"int_val negative", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 3), tbtest.Shape(), tbtest.BytesField(7, tbtest.Varint(uint64(math.MaxUint64-4)))), "scalars"), -5, true},
		{"shape [2]: not a scalar", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 1), tbtest.Shape(2), tbtest.BytesField(5, append(le32(1), le32(2)...))), "scalars"), 0, false},
		{"string tensor (text plugin)", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 7), tbtest.Shape(), tbtest.BytesField(8, []byte("hi"))), "text"), 0, false},
		{"histograms plugin", tbtest.TensorValue("t", tbtest.Cat(tbtest.VarintField(1, 2), tbtest.Shape(1), tbtest.BytesField(6, le64(7))), "histograms"), 0, false},
		{"image", tbtest.Cat(tbtest.BytesField(1, []byte("t")), tbtest.BytesField(4, tbtest.VarintField(1, 8))), 0, false},
	}
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("%s%d.host", FilePrefix, i))
			writeFile(t, path, tbtest.Records(tbtest.SummaryEvent(5, 9, c.value)))
			var out []got
			if _, err := NewFile(path).Read(collect(&out), func(e *CorruptError) { t.Errorf("warning: %v", e) }); err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 {
				t.Fatalf("%d events", len(out))
			}
			if !c.scalar {
				if len(out[0].Values) != 0 {
					t.Fatalf("read %+v from a non-scalar", out[0].Values)
				}
				return
			}
			if len(out[0].Values) != 1 || out[0].Values[0].Tag != "t" || math.Abs(out[0].Values[0].Value-c.want) > 1e-12 {
				t.Fatalf("values %+v, want t=%v", out[0].Values, c.want)
			}
		})
	}
}

func TestHalfToFloat(t *testing.T) {
	for bits, want := range map[uint16]float64{
		0x0000: 0, 0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: math.Ldexp(1, -24),
		0x3555: 0.333251953125, 0x7c00: math.Inf(1), 0xfc00: math.Inf(-1),
	} {
		if got := halfToFloat(bits); got != want {
			t.Errorf("halfToFloat(%#04x) = %v, want %v", bits, got, want)
		}
	}
	if !math.IsNaN(halfToFloat(0x7e00)) {
		t.Error("0x7e00 is a NaN")
	}
}

// The file is cut at every byte offset (mid-header, mid-data, mid-trailer): the
// reader passes the complete records, waits without error or warning, and picks up
// the rest once it is written.
func TestTruncatedThenCompleted(t *testing.T) {
	full := tbtest.Records(
		tbtest.Version(10),
		tbtest.Simple(11, 1, "a", 1.0, "b", 2.0),
		tbtest.SummaryEvent(12, 2, tbtest.TensorValue("c", tbtest.FloatTensor(3), "scalars")),
		tbtest.Simple(13, 3, "a", 4.0),
	)
	var want []got
	whole := filepath.Join(t.TempDir(), FilePrefix+"1.whole")
	writeFile(t, whole, full)
	if _, err := NewFile(whole).Read(collect(&want), nil); err != nil || len(want) != 4 {
		t.Fatalf("whole file: %d events, %v", len(want), err)
	}
	dir := t.TempDir()
	for cut := 0; cut <= len(full); cut++ {
		path := filepath.Join(dir, fmt.Sprintf("%s%d.cut", FilePrefix, cut))
		writeFile(t, path, full[:cut])
		f := NewFile(path)
		var out []got
		warn := func(e *CorruptError) { t.Errorf("cut %d: warning %v", cut, e) }
		if _, err := f.Read(collect(&out), warn); err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		before := len(out)
		appendFile(t, path, full[cut:])
		if _, err := f.Read(collect(&out), warn); err != nil {
			t.Fatalf("cut %d, completed: %v", cut, err)
		}
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("cut %d (%d events before completion): got %+v, want %+v", cut, before, out, want)
		}
	}
}

func TestBadDataChecksumSkipsTheRecord(t *testing.T) {
	r0, r1, r2 := tbtest.Record(tbtest.Version(1)), tbtest.Record(tbtest.Simple(2, 1, "a", 1.0)), tbtest.Record(tbtest.Simple(3, 2, "a", 2.0))
	bad := slices.Clone(r1)
	bad[headerLen+2] ^= 0x40 // a bit of the data
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Cat(r0, bad, r2))
	var out []got
	var warns []*CorruptError
	if _, err := NewFile(path).Read(collect(&out), func(e *CorruptError) { warns = append(warns, e) }); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[1].Step != 2 {
		t.Fatalf("events %+v, want the version and step 2", out)
	}
	if len(warns) != 1 || warns[0].Offset != int64(len(r0)) || warns[0].Reason != "bad data checksum" || warns[0].Skipped != int64(len(r1)) {
		t.Fatalf("warnings %+v", warns)
	}
	msg := warns[0].Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("offset %d", len(r0))) {
		t.Fatalf("warning %q names neither the file nor the offset", msg)
	}
}

func TestBadLengthChecksumResyncs(t *testing.T) {
	r0, r1, r2 := tbtest.Record(tbtest.Version(1)), tbtest.Record(tbtest.Simple(2, 1, "a", 1.0)), tbtest.Record(tbtest.Simple(3, 2, "a", 2.0))
	bad := slices.Clone(r1)
	bad[0] ^= 0x01 // the length: its checksum no longer holds, the length cannot be trusted
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Cat(r0, bad, r2))
	var out []got
	var warns []*CorruptError
	if _, err := NewFile(path).Read(collect(&out), func(e *CorruptError) { warns = append(warns, e) }); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[1].Step != 2 {
		t.Fatalf("events %+v, want the version and step 2", out)
	}
	if len(warns) != 1 || warns[0].Offset != int64(len(r0)) || warns[0].Reason != "bad length checksum" || warns[0].Skipped != int64(len(r1)) {
		t.Fatalf("warnings %+v", warns)
	}
}

// A header whose checksum holds but whose length is absurd (2^60) is corrupt,
// not a record still being written: it is reported and skipped, and the sound
// records after it are read.
func TestAbsurdLengthResyncs(t *testing.T) {
	r0, r2 := tbtest.Record(tbtest.Version(1)), tbtest.Record(tbtest.Simple(3, 2, "a", 2.0))
	var hdr [headerLen]byte
	binary.LittleEndian.PutUint64(hdr[:8], 1<<60)
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC(hdr[:8]))
	bad := append(hdr[:], "junk"...)
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Cat(r0, bad, r2))
	var out []got
	var warns []*CorruptError
	if _, err := NewFile(path).Read(collect(&out), func(e *CorruptError) { warns = append(warns, e) }); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[1].Step != 2 {
		t.Fatalf("events %+v, want the version and step 2", out)
	}
	if len(warns) != 1 || warns[0].Offset != int64(len(r0)) || !strings.Contains(warns[0].Reason, "implausible record length") || warns[0].Skipped != int64(len(bad)) {
		t.Fatalf("warnings %+v", warns)
	}
}

// Garbage at the end of a file is reported once, not at every poll; a sound record
// written after it is found and read.
func TestBadTailWaitsForASoundRecord(t *testing.T) {
	r0 := tbtest.Record(tbtest.Version(1))
	garbage := []byte("not a record, not at all a record")
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Cat(r0, garbage))
	f := NewFile(path)
	var out []got
	var warns []*CorruptError
	warn := func(e *CorruptError) { warns = append(warns, e) }
	for range 3 {
		if _, err := f.Read(collect(&out), warn); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != 1 || len(warns) != 1 || warns[0].Skipped != 0 || warns[0].Offset != int64(len(r0)) {
		t.Fatalf("events %+v, warnings %+v: want the version and one warning, waiting", out, warns)
	}
	appendFile(t, path, tbtest.Record(tbtest.Simple(2, 7, "a", 1.0)))
	if _, err := f.Read(collect(&out), warn); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[1].Step != 7 {
		t.Fatalf("events %+v, want step 7 after the garbage", out)
	}
	if len(warns) != 2 || warns[1].Skipped != int64(len(garbage)) {
		t.Fatalf("warnings %+v, want the skip of %d bytes", warns, len(garbage))
	}
}

func TestSessionStartIsARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Records(tbtest.Version(1), tbtest.SessionStart(2, 40)))
	var out []got
	if _, err := NewFile(path).Read(collect(&out), nil); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || !out[1].Restart || out[1].Step != 40 || out[0].Restart {
		t.Fatalf("events %+v", out)
	}
}

func TestRewrittenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Records(tbtest.Version(1), tbtest.Simple(2, 1, "a", 1.0)))
	f := NewFile(path)
	if _, err := f.Read(func(*Event) {}, nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, tbtest.Records(tbtest.Version(1))) // shorter: rewritten
	if _, err := f.Read(func(*Event) {}, nil); !errors.Is(err, ErrRewritten) {
		t.Fatalf("Read after truncation = %v, want ErrRewritten", err)
	}
	os.Remove(path)
	if _, err := f.Read(func(*Event) {}, nil); !errors.Is(err, ErrRewritten) {
		t.Fatalf("Read after removal = %v, want ErrRewritten", err)
	}
}

// A run's files are read oldest first by the time in their names, whatever their
// host names sort as, and a file that appears later is followed too.
func TestReaderFollowsFilesInCreationOrder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, FilePrefix+"1700000200.aaa"), tbtest.Records(tbtest.Version(2), tbtest.Simple(2, 20, "a", 2.0)))
	writeFile(t, filepath.Join(dir, FilePrefix+"1700000100.zzz"), tbtest.Records(tbtest.Version(1), tbtest.Simple(1, 10, "a", 1.0)))
	writeFile(t, filepath.Join(dir, "not-an-event-file"), []byte("x"))
	r := NewReader(dir, false)
	var out []got
	if _, err := r.Read(collect(&out)); err != nil {
		t.Fatal(err)
	}
	if steps := stepsOf(out); !reflect.DeepEqual(steps, []int64{10, 20}) {
		t.Fatalf("steps %v, want 10 then 20", steps)
	}
	writeFile(t, filepath.Join(dir, FilePrefix+"1700000300.aaa"), tbtest.Records(tbtest.Version(3), tbtest.Simple(3, 30, "a", 3.0)))
	appendFile(t, filepath.Join(dir, FilePrefix+"1700000200.aaa"), tbtest.Records(tbtest.Simple(2, 21, "a", 2.5)))
	out = nil
	if _, err := r.Read(collect(&out)); err != nil {
		t.Fatal(err)
	}
	if steps := stepsOf(out); !reflect.DeepEqual(steps, []int64{21, 30}) {
		t.Fatalf("steps %v, want 21 then 30", steps)
	}
}

func stepsOf(out []got) []int64 {
	var s []int64
	for _, g := range out {
		if len(g.Values) > 0 {
			s = append(s, g.Step)
		}
	}
	return s
}

// A Hugging Face output directory writes one subdirectory of runs/ per launch; read
// recursively they make one run.
func TestReaderRecursive(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "Jan02_10-00-00_host", FilePrefix+"1700000200.host.1.0"), tbtest.Records(tbtest.Simple(2, 20, "train/loss", 2.0)))
	writeFile(t, filepath.Join(dir, "Dec31_10-00-00_host", FilePrefix+"1700000100.host.1.0"), tbtest.Records(tbtest.Simple(1, 10, "train/loss", 1.0)))
	var out []got
	if _, err := NewReader(dir, true).Read(collect(&out)); err != nil {
		t.Fatal(err)
	}
	if steps := stepsOf(out); !reflect.DeepEqual(steps, []int64{10, 20}) {
		t.Fatalf("steps %v, want 10 then 20", steps)
	}
}

func TestFindRuns(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		FilePrefix + "1.host",
		"proj/exp1/" + FilePrefix + "1.host",
		"proj/exp2/" + FilePrefix + "1.host",
		"proj/exp2/" + FilePrefix + "2.host",
		".hidden/" + FilePrefix + "1.host",
		"a/b/c/d/e/f/g/h/" + FilePrefix + "1.host", // too deep
		"proj/notes.txt",
	} {
		writeFile(t, filepath.Join(root, p), nil)
	}
	runs, err := FindRuns(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "proj/exp1", "proj/exp2"}; !reflect.DeepEqual(runs, want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
	if runs, err := FindRuns(filepath.Join(root, "missing")); err != nil || len(runs) != 0 {
		t.Fatalf("missing root: %v, %v", runs, err)
	}
}

// What this package's Writer writes reads back, the session starts of a fresh
// and a resumed run included.
func TestReadsWriterOutput(t *testing.T) {
	dir := t.TempDir()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Format(time.RFC3339Nano)
	w, err := NewWriter(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Record(telemetry.Point{Step: 1, Time: ts, Metrics: map[string]float64{"reward/total": 0.5, "policy/kl": 0.25}})
	w.Emit(telemetry.Event{Step: 1, Kind: telemetry.EventCheckpoint, Message: "saved"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err = NewWriter(dir, 1); err != nil { // resumed from step 0
		t.Fatal(err)
	}
	w.Record(telemetry.Point{Step: 1, Time: ts, Metrics: map[string]float64{"reward/total": 0.75}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out []got
	if _, err := NewReader(filepath.Join(dir, Dir), false).Read(collect(&out)); err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, g := range out {
		if g.Restart {
			summary = append(summary, fmt.Sprintf("restart@%d", g.Step))
		}
		for _, v := range g.Values {
			summary = append(summary, fmt.Sprintf("%s@%d=%g", v.Tag, g.Step, v.Value))
		}
	}
	want := []string{"restart@0", "policy/kl@1=0.25", "reward/total@1=0.5", "restart@1", "reward/total@1=0.75"}
	if !reflect.DeepEqual(summary, want) {
		t.Fatalf("read %v, want %v (text summaries are not scalars)", summary, want)
	}
}

// BenchmarkRead reads event files of two shapes: one scalar per event, as
// SummaryWriter.add_scalar writes (verl, Hugging Face's TensorBoardCallback), and 40
// scalars per event, as this package's Writer writes a step.
func BenchmarkRead(b *testing.B) {
	for _, perEvent := range []int{1, 40} {
		b.Run(fmt.Sprintf("values=%d", perEvent), func(b *testing.B) {
			const n = 20_000
			var data []byte
			for i := range n {
				kv := make([]any, 0, 2*perEvent)
				for j := range perEvent {
					kv = append(kv, fmt.Sprintf("actor/metric_%02d", (i+j)%40), float64(i))
				}
				data = append(data, tbtest.Record(tbtest.Simple(float64(i), int64(i), kv...))...)
			}
			path := filepath.Join(b.TempDir(), FilePrefix+"1.host")
			writeFile(b, path, data)
			b.SetBytes(int64(len(data)))
			records, values := 0, 0
			for b.Loop() {
				k, err := NewFile(path).Read(func(e *Event) { values += len(e.Values) }, nil)
				if err != nil || k != n {
					b.Fatalf("Read = %d, %v", k, err)
				}
				records += k
			}
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(values)/b.Elapsed().Seconds(), "values/s")
		})
	}
}

// A budget reads a long run in slices, each going on where the last stopped,
// across files; ReadSpan glances into the middle of a file from a sound record.
func TestBudgetAndSpan(t *testing.T) {
	dir := t.TempDir()
	var recs [][]byte
	for i := range 100 {
		recs = append(recs, tbtest.Record(tbtest.Simple(float64(i), int64(i), "a", float64(i))))
	}
	writeFile(t, filepath.Join(dir, FilePrefix+"1.host"), tbtest.Cat(recs[:50]...))
	writeFile(t, filepath.Join(dir, FilePrefix+"2.host"), tbtest.Cat(recs[50:]...))
	r := NewReader(dir, false)
	r.Budget = int64(len(recs[0]) * 30)
	var steps []int64
	fn := func(e *Event) { steps = append(steps, e.Step) }
	for reads := 0; ; reads++ {
		n, err := r.Read(fn)
		if err != nil || reads > 10 {
			t.Fatal(err, reads)
		}
		if done, total := r.Progress(); n == 0 && done == total {
			break
		}
	}
	if len(steps) != 100 || !slices.IsSorted(steps) {
		t.Fatalf("read %d steps %v", len(steps), steps)
	}
	var mid []int64
	path := filepath.Join(dir, FilePrefix+"1.host")
	if err := ReadSpan(path, int64(len(recs[0])*20)+5, int64(len(recs[0])*3), func(e *Event) { mid = append(mid, e.Step) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mid, []int64{21, 22, 23}) {
		t.Fatalf("span read %v, want the 3 records after the offset", mid)
	}
}

// The fast record builder writes the bytes the plain one does.
func TestAppendScalarRecord(t *testing.T) {
	for _, c := range []struct {
		step int64
		tag  string
		v    float64
	}{{0, "a", 1}, {999_999, "actor/entropy", -0.25}, {1 << 40, strings.Repeat("x", 100), 3.5}} {
		got := tbtest.AppendScalarRecord(nil, 1.7e9+0.5, c.step, c.tag, float32(c.v))
		if want := tbtest.Record(tbtest.Simple(1.7e9+0.5, c.step, c.tag, c.v)); !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %x\nwant %x", c, got, want)
		}
	}
}

// Text summaries and a session start's hyperparameters come with their event, as
// PyTorch's SummaryWriter writes them (add_text; add_hparams's experiment and
// session start): texts by tag, hyperparameters by name with their values as text.
// Neither is read as a scalar, and the scalars of the same file are read as before.
func TestReadTextsAndHParams(t *testing.T) {
	args := `{"max_steps": 40, "learning_rate": 5e-06}`
	path := filepath.Join(t.TempDir(), FilePrefix+"1.host")
	writeFile(t, path, tbtest.Records(
		tbtest.Version(1),
		tbtest.SummaryEvent(2, 0, tbtest.TextValue("args", args), tbtest.TextValue("model_config", "{}")),
		tbtest.SummaryEvent(3, 0, tbtest.HParamsExperimentValue("lr", "optim", "bf16", "seed", "note")),
		tbtest.SummaryEvent(3, 0, tbtest.HParamsValue(
			tbtest.HParam{Name: "lr", Value: 5e-06},
			tbtest.HParam{Name: "optim", Value: `adamw "torch"`},
			tbtest.HParam{Name: "bf16", Value: true},
			tbtest.HParam{Name: "seed", Value: 3407.0},
			tbtest.HParam{Name: "note", Value: nil},
		)),
		tbtest.Simple(4, 1, "train/loss", 0.5),
		// A text tensor of two strings is not one text; a string tensor without the
		// text plugin is not a text either.
		tbtest.SummaryEvent(5, 1,
			tbtest.TensorValue("two", tbtest.Cat(tbtest.VarintField(1, 7), tbtest.Shape(2), tbtest.BytesField(8, []byte("a")), tbtest.BytesField(8, []byte("b"))), "text"),
			tbtest.TensorValue("bare", tbtest.Cat(tbtest.VarintField(1, 7), tbtest.Shape(), tbtest.BytesField(8, []byte("c"))), "")),
	))
	var (
		texts   []Text
		hparams []HParam
		values  []Value
	)
	if _, err := NewFile(path).Read(func(e *Event) {
		texts = append(texts, e.Texts...)
		hparams = append(hparams, e.HParams...)
		values = append(values, e.Values...)
	}, func(e *CorruptError) { t.Errorf("warning: %v", e) }); err != nil {
		t.Fatal(err)
	}
	wantTexts := []Text{{"args/text_summary", args}, {"model_config/text_summary", "{}"}}
	if !reflect.DeepEqual(texts, wantTexts) {
		t.Errorf("texts %q, want %q", texts, wantTexts)
	}
	wantHP := []HParam{{"lr", "5e-06"}, {"optim", `"adamw \"torch\""`}, {"bf16", "true"}, {"seed", "3407"}, {"note", "null"}}
	if !reflect.DeepEqual(hparams, wantHP) {
		t.Errorf("hparams %q, want %q", hparams, wantHP)
	}
	if want := []Value{{"train/loss", 0.5}}; !reflect.DeepEqual(values, want) {
		t.Errorf("values %v, want %v", values, want)
	}
}

// The writer's text events (samples, events) are read back as texts.
func TestReadsWriterTexts(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.writeRecord(textEvent(1, 7, "notes", "hello"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var texts []Text
	if _, err := NewReader(filepath.Join(dir, Dir), false).Read(func(e *Event) { texts = append(texts, e.Texts...) }); err != nil {
		t.Fatal(err)
	}
	if want := []Text{{"notes", "hello"}}; !reflect.DeepEqual(texts, want) {
		t.Errorf("texts %q, want %q", texts, want)
	}
}
