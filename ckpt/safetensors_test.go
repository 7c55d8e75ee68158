package ckpt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameTensors compares by bits so NaN payloads and negative zero count as preserved.
func sameTensors(t *testing.T, got, want []Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tensors, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if w.DType == "" {
			w.DType = F32
		}
		if g.Name != w.Name || g.DType != w.DType || len(g.Shape) != len(w.Shape) {
			t.Fatalf("tensor %d: got %s %s%v, want %s %s%v", i, g.Name, g.DType, g.Shape, w.Name, w.DType, w.Shape)
		}
		for k := range w.Shape {
			if g.Shape[k] != w.Shape[k] {
				t.Fatalf("tensor %q: shape %v, want %v", w.Name, g.Shape, w.Shape)
			}
		}
		if len(g.Data) != len(w.Data) || !bytes.Equal(g.Raw, w.Raw) {
			t.Fatalf("tensor %q: data differs", w.Name)
		}
		for k := range w.Data {
			if math.Float32bits(g.Data[k]) != math.Float32bits(w.Data[k]) {
				t.Fatalf("tensor %q[%d] = %v, want %v", w.Name, k, g.Data[k], w.Data[k])
			}
		}
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		tensors []Tensor // sorted by name, as the reader returns them
		meta    map[string]string
	}{
		{"empty file", nil, nil},
		{"one matrix", []Tensor{{Name: "w", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}}}, nil},
		{"scalar and zero-size", []Tensor{
			{Name: "bias", Shape: []int{}, Data: []float32{0.25}},
			{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
			{Name: "empty2", Shape: []int{3, 0}, Data: []float32{}},
		}, map[string]string{"format": "pt"}},
		{"special floats", []Tensor{{Name: "x", Shape: []int{5}, Data: []float32{
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32,
		}}}, nil},
		{"mixed dtypes", []Tensor{
			{Name: "adam.m", Shape: []int{2, 2}, Data: []float32{1, -1, 0.5, 3}},
			Int64Tensor("adam.step", []int{1}, []int64{-7}),
			{Name: "rng", DType: U8, Shape: []int{3}, Raw: []byte{1, 2, 255}},
		}, map[string]string{"phase": "rft", "step": "500", "quote\"key": "new\nline"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSafetensors(&buf, tc.tensors, tc.meta); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			n := binary.LittleEndian.Uint64(b)
			if n%8 != 0 {
				t.Errorf("header length %d is not 8-byte aligned", n)
			}
			if strings.TrimRight(string(b[8:8+n]), " ") != strings.TrimSpace(string(b[8:8+n])) {
				t.Errorf("header padding is not trailing spaces: %q", b[8:8+n])
			}
			got, meta, err := ReadSafetensors(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			sameTensors(t, got, tc.tensors)
			if len(meta) != len(tc.meta) || (len(meta) > 0 && !reflect.DeepEqual(meta, tc.meta)) {
				t.Errorf("metadata %v, want %v", meta, tc.meta)
			}
			// The in-memory path used by Verify must agree with the streaming one.
			got2, _, err := parseSafetensors(b)
			if err != nil {
				t.Fatal(err)
			}
			sameTensors(t, got2, tc.tensors)
		})
	}
}

func TestSafetensorsLayoutMatchesSpec(t *testing.T) {
	in := []Tensor{
		{Name: "z.last", Shape: []int{2}, Data: []float32{7, 8}},
		{Name: "a.first", Shape: []int{1, 3}, Data: []float32{1, 2, 3}},
		Int64Tensor("m.step", []int{}, []int64{42}),
	}
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	got, meta, err := specParse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if meta["k"] != "v" {
		t.Errorf("metadata %v", meta)
	}
	// Widest type first, then name order, contiguous from offset 0: m.step [0,8), a.first [8,20),
	// z.last [20,28).
	n := binary.LittleEndian.Uint64(buf.Bytes())
	data := buf.Bytes()[8+n:]
	if len(data) != 28 {
		t.Fatalf("data buffer is %d bytes, want 28", len(data))
	}
	if !bytes.Equal(data[8:20], f32le(1, 2, 3)) || !bytes.Equal(data[20:], f32le(7, 8)) {
		t.Errorf("F32 tensors not laid out after the I64 one in name order: % x", data)
	}
	if v := binary.LittleEndian.Uint64(data[:8]); v != 42 || got["m.step"].DType != "I64" || len(got["m.step"].Shape) != 0 {
		t.Errorf("m.step = %d %+v", v, got["m.step"])
	}
}

// TestSafetensorsTensorsAreAligned checks what a reader that maps the file and casts in place
// needs: each tensor's file offset (8 + header length + its first data offset) a multiple of its
// element size, for every mix of the types pixelis writes (a checkpoint's optimizer and replay
// files hold F32 moments and tensors, an I64 step and U8 bytes side by side).
func TestSafetensorsTensorsAreAligned(t *testing.T) {
	mixes := map[string][]Tensor{
		"odd F32 before an I64": {
			{Name: "m/a", Shape: []int{3}, Data: []float32{1, 2, 3}},
			Int64Tensor("step", []int{1}, []int64{7}),
			{Name: "v/a", Shape: []int{3}, Data: []float32{4, 5, 6}},
		},
		"odd U8 before F32 and I64": {
			{Name: "a.bytes", DType: U8, Shape: []int{5}, Raw: []byte{1, 2, 3, 4, 5}},
			{Name: "b.floats", Shape: []int{1}, Data: []float32{9}},
			Int64Tensor("c.ints", []int{2}, []int64{1, 2}),
			{Name: "d.bytes", DType: U8, Shape: []int{3}, Raw: []byte{6, 7, 8}},
		},
	}
	for name, tensors := range mixes {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSafetensors(&buf, tensors, map[string]string{"odd": "x"}); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			n := binary.LittleEndian.Uint64(b)
			if n%8 != 0 {
				t.Errorf("header length %d is not a multiple of 8", n)
			}
			var header map[string]json.RawMessage
			if err := json.Unmarshal(b[8:8+n], &header); err != nil {
				t.Fatal(err)
			}
			for _, tn := range tensors {
				var e headerEntry
				if err := json.Unmarshal(header[tn.Name], &e); err != nil {
					t.Fatal(err)
				}
				if at := 8 + n + e.DataOffsets[0]; at%uint64(e.DType.size()) != 0 {
					t.Errorf("%s (%s) starts at file offset %d, not a multiple of %d", tn.Name, e.DType, at, e.DType.size())
				}
			}
			back, _, err := ReadSafetensors(bytes.NewReader(b))
			if err != nil || len(back) != len(tensors) {
				t.Fatalf("read back %d tensors, %v", len(back), err)
			}
		})
	}
}

func TestSafetensorsDeterministic(t *testing.T) {
	a := Tensor{Name: "a", Shape: []int{1}, Data: []float32{1}}
	b := Tensor{Name: "b", Shape: []int{1}, Data: []float32{2}}
	meta := map[string]string{"x": "1", "y": "2", "z": "3"}
	var first, second bytes.Buffer
	if err := WriteSafetensors(&first, []Tensor{a, b}, meta); err != nil {
		t.Fatal(err)
	}
	if err := WriteSafetensors(&second, []Tensor{b, a}, meta); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("same tensors in another order gave different bytes; hashes would differ between equal saves")
	}
}

func TestReadForeignLayout(t *testing.T) {
	// Written as another tool may: metadata first, no padding, tensors not in name order, spaces.
	b := rawFile(`{"__metadata__":{"format":"pt"}, "b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"data_offsets":[8,16],"shape":[],"dtype":"I64"}}`,
		append(f32le(3, 4), binary.LittleEndian.AppendUint64(nil, 9)...))
	ts, meta, err := ReadSafetensors(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if meta["format"] != "pt" || len(ts) != 2 || ts[0].Name != "a" || ts[1].Name != "b" {
		t.Fatalf("got %+v %v", ts, meta)
	}
	if v, err := ts[0].Int64s(); err != nil || v[0] != 9 {
		t.Errorf("a = %v, %v", v, err)
	}
	if ts[1].Data[0] != 3 || ts[1].Data[1] != 4 {
		t.Errorf("b = %v", ts[1].Data)
	}
}

func TestReadSafetensorsRejects(t *testing.T) {
	eight := f32le(1, 2)
	huge := binary.LittleEndian.AppendUint64(nil, 1<<40)
	tests := []struct {
		name string
		file []byte
		want error  // ErrHeader or ErrShape
		msg  string // a fragment the message must contain, to keep errors specific
	}{
		{"empty", nil, ErrHeader, "header length"},
		{"short length", []byte{1, 2, 3}, ErrHeader, "header length"},
		{"length beyond file", append(binary.LittleEndian.AppendUint64(nil, 64), "{}"...), ErrHeader, "header length 64"},
		{"length beyond limit", append(huge, "{}"...), ErrHeader, "exceeds limit"},
		{"not json", rawFile(`{"a":`, nil), ErrHeader, "header JSON"},
		{"not an object", rawFile(`[1,2]`, nil), ErrHeader, "not a JSON object"},
		{"trailing bytes", rawFile(`{} {}`, nil), ErrHeader, "after its JSON object"},
		{"invalid utf8", rawFile("{\"\xff\":1}", nil), ErrHeader, "UTF-8"},
		{"dtype pixelis does not read", rawFile(`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, eight), ErrDType, `tensor "a" is F16, a type pixelis does not read (it reads F32, I64 and U8)`},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F17","shape":[4],"data_offsets":[0,8]}}`, eight), ErrHeader, `unknown dtype "F17"`},
		{"missing dtype", rawFile(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, eight), ErrHeader, "unknown dtype"},
		{"unknown field", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, eight), ErrHeader, `tensor "a"`},
		{"null shape", rawFile(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,8]}}`, eight), ErrHeader, "no shape"},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, eight), ErrHeader, `tensor "a"`},
		{"three offsets", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}`, eight), ErrHeader, "has 3 numbers"},
		{"shape too small", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, eight), ErrShape, "does not match"},
		{"shape too big", rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight), ErrShape, "does not match"},
		{"shape overflows", rawFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}}`, eight), ErrShape, "does not match"},
		{"offsets past end", rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, eight), ErrHeader, "outside"},
		{"offsets reversed", rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, eight), ErrHeader, "outside"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), ErrHeader, "overlaps"},
		{"gap", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), ErrHeader, "gap of 4 bytes"},
		{"buffer not covered", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, eight), ErrHeader, "cover 4 bytes of a 8-byte"},
		{"duplicate name", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), ErrHeader, `names "a" twice`},
		{"metadata not strings", rawFile(`{"__metadata__":{"n":1}}`, nil), ErrHeader, "__metadata__"},
		{"metadata twice", rawFile(`{"__metadata__":{},"__metadata__":{}}`, nil), ErrHeader, "twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, read := range []struct {
				how string
				fn  func([]byte) error
			}{
				{"stream", func(b []byte) error { _, _, err := ReadSafetensors(bytes.NewReader(b)); return err }},
				{"memory", func(b []byte) error { _, _, err := parseSafetensors(b); return err }},
			} {
				err := read.fn(tc.file)
				if !errors.Is(err, tc.want) {
					t.Fatalf("%s: error %v, want %v", read.how, err, tc.want)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("%s: error %q does not mention %q", read.how, err, tc.msg)
				}
			}
		})
	}
}

func TestReadSafetensorsFileNamesPath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "broken.safetensors")
	if err := os.WriteFile(p, rawFile(`{"a":1}`, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := ReadSafetensorsFile(p)
	if err == nil || !strings.Contains(err.Error(), p) || !errors.Is(err, ErrHeader) {
		t.Fatalf("error %v should name %s and wrap ErrHeader", err, p)
	}
}

func TestWriteSafetensorsRejects(t *testing.T) {
	tests := []struct {
		name    string
		tensors []Tensor
		msg     string
	}{
		{"empty name", []Tensor{{Shape: []int{1}, Data: []float32{1}}}, "empty name"},
		{"reserved name", []Tensor{{Name: "__metadata__", Shape: []int{}, Data: []float32{1}}}, "reserved"},
		{"duplicate", []Tensor{{Name: "a", Shape: []int{1}, Data: []float32{1}}, {Name: "a", Shape: []int{1}, Data: []float32{2}}}, "twice"},
		{"duplicate of another dtype", []Tensor{{Name: "a", Shape: []int{1}, Data: []float32{1}}, {Name: "b", Shape: []int{1}, Data: []float32{1}},
			{Name: "a", DType: U8, Shape: []int{1}, Raw: []byte{1}}}, "twice"},
		{"too few values", []Tensor{{Name: "a", Shape: []int{2, 2}, Data: []float32{1, 2, 3}}}, "holds 4 values, Data has 3"},
		{"negative dim", []Tensor{{Name: "a", Shape: []int{-1}, Data: nil}}, "negative"},
		{"unknown dtype", []Tensor{{Name: "a", DType: "BF16", Shape: []int{1}, Raw: []byte{0, 0}}}, "unknown dtype"},
		{"raw size", []Tensor{{Name: "a", DType: I64, Shape: []int{2}, Raw: make([]byte, 8)}}, "needs 16 bytes"},
		{"raw on F32", []Tensor{{Name: "a", Shape: []int{0}, Data: []float32{}, Raw: []byte{}}}, "raw bytes"},
		{"data on U8", []Tensor{{Name: "a", DType: U8, Shape: []int{1}, Raw: []byte{1}, Data: []float32{1}}}, "float32 Data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteSafetensors(&buf, tc.tensors, nil)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.msg)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing; a rejected file must not be half written", buf.Len())
			}
		})
	}
}

func TestInt64s(t *testing.T) {
	tests := []struct {
		name string
		in   Tensor
		want []int64
		err  bool
	}{
		{"values", Int64Tensor("s", []int{3}, []int64{0, -1, math.MaxInt64}), []int64{0, -1, math.MaxInt64}, false},
		{"wrong dtype", Tensor{Name: "f", Shape: []int{1}, Data: []float32{1}}, nil, true},
		{"ragged bytes", Tensor{Name: "r", DType: I64, Raw: make([]byte, 5)}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.Int64s()
			if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Int64s = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func FuzzReadSafetensors(f *testing.F) {
	var valid bytes.Buffer
	WriteSafetensors(&valid, []Tensor{
		{Name: "w", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		Int64Tensor("n", []int{1}, []int64{5}),
		{Name: "u", DType: U8, Shape: []int{3}, Raw: []byte{1, 2, 3}},
	}, map[string]string{"k": "v"})
	f.Add(valid.Bytes())
	f.Add(valid.Bytes()[:len(valid.Bytes())-3])
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1)))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{}}`, f32le(1)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, meta, err := ReadSafetensors(bytes.NewReader(b))
		_, _, err2 := parseSafetensors(b)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("stream and memory readers disagree: %v vs %v", err, err2)
		}
		if err != nil {
			return
		}
		// Whatever the reader accepts, the writer must reproduce: same tensors after a round trip.
		for _, tn := range ts {
			if tn.Name == "" {
				return // valid per the format, but the writer refuses unnamed tensors
			}
		}
		var buf bytes.Buffer
		if err := WriteSafetensors(&buf, ts, meta); err != nil {
			t.Fatalf("rewrite of accepted file failed: %v", err)
		}
		again, _, err := ReadSafetensors(&buf)
		if err != nil {
			t.Fatalf("re-read failed: %v", err)
		}
		sameTensors(t, again, ts)
	})
}
