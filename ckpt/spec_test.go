package ckpt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

// This file holds a deliberately independent reading of the safetensors specification, written
// without any code from the package, so tests catch a writer and reader that agree with each
// other but not with the format other tools implement.

type specTensor struct {
	DType  string
	Shape  []int
	Floats []float32
	Bytes  []byte
}

// specParse reads: 8 bytes little-endian header size N; N bytes of JSON mapping names to
// {dtype, shape, data_offsets}; offsets relative to the byte after the header.
func specParse(b []byte) (map[string]specTensor, map[string]string, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("short file")
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("header size %d too big", n)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		return nil, nil, err
	}
	data := b[8+n:]
	out := map[string]specTensor{}
	var meta map[string]string
	for name, raw := range header {
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, nil, err
			}
			continue
		}
		var info struct {
			Dtype       string `json:"dtype"`
			Shape       []int  `json:"shape"`
			DataOffsets []int  `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			return nil, nil, err
		}
		if len(info.DataOffsets) != 2 || info.DataOffsets[1] > len(data) || info.DataOffsets[0] > info.DataOffsets[1] {
			return nil, nil, fmt.Errorf("%s: bad offsets %v", name, info.DataOffsets)
		}
		bs := data[info.DataOffsets[0]:info.DataOffsets[1]]
		t := specTensor{DType: info.Dtype, Shape: info.Shape, Bytes: bs}
		if info.Dtype == "F32" {
			for i := 0; i+4 <= len(bs); i += 4 {
				t.Floats = append(t.Floats, math.Float32frombits(binary.LittleEndian.Uint32(bs[i:])))
			}
		}
		out[name] = t
	}
	return out, meta, nil
}

// rawFile assembles a file by hand from a header string and data bytes, as another tool might.
func rawFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func f32le(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func TestSpecParseSelfCheck(t *testing.T) {
	// The oracle itself must be right, or it proves nothing: check it on a hand-made file.
	b := rawFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32le(1.5, -2))
	got, _, err := specParse(b)
	if err != nil {
		t.Fatal(err)
	}
	if w := got["w"]; len(w.Floats) != 2 || w.Floats[0] != 1.5 || w.Floats[1] != -2 || w.Shape[0] != 2 {
		t.Fatalf("spec parser read %+v", w)
	}
}
