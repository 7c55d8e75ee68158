package ckpt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"sort"
	"unicode/utf8"
)

// DType names a tensor element type with the spelling safetensors uses in its header.
type DType string

// The element types pixelis writes. F32 carries weights and optimizer moments; I64 and U8 carry
// raw state such as step counters and generator state that must survive a resume bit for bit.
const (
	F32 DType = "F32"
	I64 DType = "I64"
	U8  DType = "U8"
)

// size is the width of one element in bytes, or 0 for a type this package does not know.
func (d DType) size() int {
	switch d {
	case F32:
		return 4
	case I64:
		return 8
	case U8:
		return 1
	}
	return 0
}

// Tensor is one named array in a safetensors file.
//
// An F32 tensor (DType F32 or empty) holds its values in Data; I64 and U8 tensors hold their
// little-endian bytes in Raw, so state that is not a weight round-trips without conversion.
// Tensors read from a file always have DType set.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []float32
	Raw   []byte
}

// Int64Tensor builds an I64 tensor from values, the form optimizer step counters are stored in.
func Int64Tensor(name string, shape []int, values []int64) Tensor {
	raw := make([]byte, 8*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return Tensor{Name: name, DType: I64, Shape: slices.Clone(shape), Raw: raw}
}

// Int64s decodes an I64 tensor's values.
func (t Tensor) Int64s() ([]int64, error) {
	if t.DType != I64 {
		return nil, fmt.Errorf("tensor %q: is %s, not I64", t.Name, t.dtype())
	}
	if len(t.Raw)%8 != 0 {
		return nil, fmt.Errorf("tensor %q: %d raw bytes is not a whole number of int64 values", t.Name, len(t.Raw))
	}
	out := make([]int64, len(t.Raw)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Raw[8*i:]))
	}
	return out, nil
}

// NumElements is the product of the shape; a scalar (empty shape) has one element.
func (t Tensor) NumElements() int {
	n, _ := elements(t.Shape)
	return n
}

func (t Tensor) dtype() DType {
	if t.DType == "" {
		return F32
	}
	return t.DType
}

// Errors returned by the safetensors reader wrap one of these, so a caller (Verify) can tell a
// damaged header from a header whose shapes disagree with its byte ranges.
var (
	ErrHeader = errors.New("bad safetensors header")
	ErrShape  = errors.New("shape does not match data")
	// ErrDType marks a well-formed file holding a tensor of a type pixelis has no use for (F16,
	// BF16, F64, ...): the file is not damaged, it is not a pixelis file.
	ErrDType = errors.New("tensor type pixelis does not read")
)

// formatDTypes are the element types of the safetensors format that pixelis does not read, so
// that such a file is refused for what it is rather than as a damaged header.
var formatDTypes = []DType{"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E5M2FNUZ", "F8_E4M3FNUZ", "F8_E8M0",
	"I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "C64", "I64", "U64"}

// maxHeader bounds the JSON header. It is the limit of the reference implementation, so a file
// it accepts is accepted here, and a corrupt length cannot make the reader allocate gigabytes.
const maxHeader = 100_000_000

// metadataKey is the reserved header entry holding string metadata rather than a tensor.
const metadataKey = "__metadata__"

// headerEntry is one tensor's description in the JSON header.
type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []uint64 `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// WriteSafetensors writes tensors and string metadata in the safetensors format: an 8-byte
// little-endian header length, a JSON header padded with spaces to 8-byte alignment, then the
// tensors' bytes laid out contiguously, widest element type first and by name within a type
// (the reference implementation's order). The input slice is not modified.
//
// That order puts every tensor at a file offset that is a multiple of its element size, so a
// reader that maps the file and casts in place (numpy.memmap, torch.frombuffer) gets aligned
// arrays: in name order, an I64 step counter after an odd number of F32 values sat 4 bytes off.
func WriteSafetensors(w io.Writer, tensors []Tensor, meta map[string]string) error {
	sorted := slices.Clone(tensors)
	sort.Slice(sorted, func(i, j int) bool { return layoutBefore(sorted[i], sorted[j]) })

	header := make(map[string]any, len(sorted)+1)
	if len(meta) > 0 {
		header[metadataKey] = meta
	}
	var problems []error
	var offset uint64
	seen := make(map[string]bool, len(sorted))
	for _, t := range sorted {
		if err := checkTensor(t); err != nil {
			problems = append(problems, err)
			continue
		}
		if seen[t.Name] {
			problems = append(problems, fmt.Errorf("tensor %q: name used twice", t.Name))
			continue
		}
		seen[t.Name] = true
		n := uint64(t.NumElements() * t.dtype().size())
		shape := make([]uint64, len(t.Shape)) // never nil: a scalar's shape must be [], not null
		for k, d := range t.Shape {
			shape[k] = uint64(d)
		}
		header[t.Name] = headerEntry{DType: t.dtype(), Shape: shape, DataOffsets: []uint64{offset, offset + n}}
		offset += n
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("write safetensors: %w", err)
	}
	js, err := json.Marshal(header) // map keys come out sorted, so equal inputs give equal bytes
	if err != nil {
		return fmt.Errorf("write safetensors: encode header: %w", err)
	}
	// Padding keeps the data buffer 8-byte aligned for readers that map the file and cast in place.
	pad := (8 - len(js)%8) % 8
	js = append(js, bytes.Repeat([]byte{' '}, pad)...)

	bw := bufio.NewWriterSize(w, 1<<16)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	bw.Write(lenBuf[:])
	bw.Write(js)
	var chunk [4096]byte
	for _, t := range sorted {
		if t.dtype() != F32 {
			bw.Write(t.Raw)
			continue
		}
		for data := t.Data; len(data) > 0; {
			n := min(len(data), len(chunk)/4)
			for i, v := range data[:n] {
				binary.LittleEndian.PutUint32(chunk[4*i:], math.Float32bits(v))
			}
			bw.Write(chunk[:4*n])
			data = data[n:]
		}
	}
	// bufio keeps the first write error and returns it from Flush, so the writes above need no checks.
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write safetensors: %w", err)
	}
	return nil
}

// layoutBefore orders tensors in the data buffer: wider elements first, then by name. Every
// size is a power of two no wider than the header's 8-byte alignment, so each tensor starts at a
// multiple of its own element size.
func layoutBefore(a, b Tensor) bool {
	if sa, sb := a.dtype().size(), b.dtype().size(); sa != sb {
		return sa > sb
	}
	return a.Name < b.Name
}

// checkTensor rejects a tensor the writer cannot describe honestly in a header.
func checkTensor(t Tensor) error {
	if t.Name == "" {
		return errors.New("tensor with empty name")
	}
	if t.Name == metadataKey {
		return fmt.Errorf("tensor %q: name is reserved for metadata", t.Name)
	}
	size := t.dtype().size()
	if size == 0 {
		return fmt.Errorf("tensor %q: unknown dtype %q (want F32, I64 or U8)", t.Name, t.DType)
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor %q: negative dimension in shape %v", t.Name, t.Shape)
		}
	}
	n, ok := elements(t.Shape)
	if !ok || n > math.MaxInt/size {
		return fmt.Errorf("tensor %q: shape %v is too large", t.Name, t.Shape)
	}
	if t.dtype() == F32 {
		if t.Raw != nil {
			return fmt.Errorf("tensor %q: F32 tensor carries raw bytes; put values in Data", t.Name)
		}
		if len(t.Data) != n {
			return fmt.Errorf("tensor %q: shape %v holds %d values, Data has %d", t.Name, t.Shape, n, len(t.Data))
		}
		return nil
	}
	if t.Data != nil {
		return fmt.Errorf("tensor %q: %s tensor carries float32 Data; put bytes in Raw", t.Name, t.DType)
	}
	if len(t.Raw) != n*size {
		return fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, Raw has %d", t.Name, t.Shape, t.DType, n*size, len(t.Raw))
	}
	return nil
}

// elements multiplies out a shape, reporting false on a negative dimension or overflow.
func elements(shape []int) (int, bool) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// ReadSafetensorsFile reads and validates a safetensors file; errors name the file.
func ReadSafetensorsFile(path string) ([]Tensor, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read safetensors: %w", err)
	}
	ts, meta, err := parseSafetensors(b)
	if err != nil {
		return nil, nil, fmt.Errorf("read safetensors %s: %w", path, err)
	}
	return ts, meta, nil
}

// ReadSafetensors reads and validates a whole safetensors stream. Tensors come back sorted by name.
//
// Validation follows the reference implementation: the header length must fit the stream and a
// sane bound, the header must be one UTF-8 JSON object with unique keys, every dtype known, every
// shape's byte size equal to its data_offsets range, and the ranges must tile the data buffer
// exactly, with no overlap, gap or trailing bytes.
func ReadSafetensors(r io.Reader) ([]Tensor, map[string]string, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, fmt.Errorf("read safetensors: header length: %w: %w", ErrHeader, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeader {
		return nil, nil, fmt.Errorf("read safetensors: header length %d exceeds limit %d: %w", n, maxHeader, ErrHeader)
	}
	// LimitReader grows the buffer as bytes arrive, so a lying length on a short stream costs little.
	header, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, nil, fmt.Errorf("read safetensors: header: %w", err)
	}
	if uint64(len(header)) != n {
		return nil, nil, fmt.Errorf("read safetensors: header length %d but stream ends after %d bytes: %w", n, len(header), ErrHeader)
	}
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read safetensors: data: %w", err)
	}
	ts, meta, err := decode(header, buf)
	if err != nil {
		return nil, nil, fmt.Errorf("read safetensors: %w", err)
	}
	return ts, meta, nil
}

// parseSafetensors validates and decodes a whole file held in memory.
func parseSafetensors(b []byte) ([]Tensor, map[string]string, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("%d bytes is shorter than the 8-byte header length: %w", len(b), ErrHeader)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxHeader {
		return nil, nil, fmt.Errorf("header length %d exceeds limit %d: %w", n, maxHeader, ErrHeader)
	}
	if n > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("header length %d does not fit a %d-byte file: %w", n, len(b), ErrHeader)
	}
	return decode(b[8:8+n], b[8+n:])
}

type span struct {
	name       string
	begin, end uint64
}

// decode checks a header against its data buffer and copies the tensors out.
func decode(header, buf []byte) ([]Tensor, map[string]string, error) {
	entries, meta, err := parseHeader(header)
	if err != nil {
		return nil, nil, err
	}
	spans := make([]span, 0, len(entries))
	tensors := make([]Tensor, 0, len(entries))
	for name, e := range entries {
		size := e.DType.size()
		if size == 0 && slices.Contains(formatDTypes, e.DType) {
			return nil, nil, fmt.Errorf("tensor %q is %s, a type pixelis does not read (it reads F32, I64 and U8): %w", name, e.DType, ErrDType)
		}
		if size == 0 {
			return nil, nil, fmt.Errorf("tensor %q: unknown dtype %q (want F32, I64 or U8): %w", name, e.DType, ErrHeader)
		}
		if e.Shape == nil {
			return nil, nil, fmt.Errorf("tensor %q: no shape: %w", name, ErrHeader)
		}
		if len(e.DataOffsets) != 2 {
			return nil, nil, fmt.Errorf("tensor %q: data_offsets has %d numbers, want 2: %w", name, len(e.DataOffsets), ErrHeader)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin > end || end > uint64(len(buf)) {
			return nil, nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the %d-byte data buffer: %w", name, begin, end, len(buf), ErrHeader)
		}
		shape := make([]int, len(e.Shape))
		count, overflow := uint64(1), false
		for i, d := range e.Shape {
			if d > math.MaxInt {
				overflow = true
				break
			}
			shape[i] = int(d)
			hi, lo := bits.Mul64(count, d)
			overflow = overflow || hi != 0
			count = lo
		}
		hi, bytesNeeded := bits.Mul64(count, uint64(size))
		if overflow || hi != 0 || bytesNeeded != end-begin {
			return nil, nil, fmt.Errorf("tensor %q: shape %v of %s does not match data_offsets [%d, %d] (%d bytes): %w",
				name, e.Shape, e.DType, begin, end, end-begin, ErrShape)
		}
		spans = append(spans, span{name, begin, end})
		t := Tensor{Name: name, DType: e.DType, Shape: shape}
		data := buf[begin:end]
		if e.DType == F32 {
			t.Data = make([]float32, count)
			for i := range t.Data {
				t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		} else {
			t.Raw = bytes.Clone(data)
		}
		tensors = append(tensors, t)
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	var at uint64
	for _, s := range spans {
		if s.begin != at {
			what := "overlaps the tensor before it"
			if s.begin > at {
				what = fmt.Sprintf("leaves a gap of %d bytes before it", s.begin-at)
			}
			return nil, nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] %s: %w", s.name, s.begin, s.end, what, ErrHeader)
		}
		at = s.end
	}
	if at != uint64(len(buf)) {
		return nil, nil, fmt.Errorf("tensors cover %d bytes of a %d-byte data buffer: %w", at, len(buf), ErrHeader)
	}
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].Name < tensors[j].Name })
	return tensors, meta, nil
}

// parseHeader walks the header object token by token, because decoding it into a map would
// silently keep the last of two entries with the same name.
func parseHeader(header []byte) (map[string]headerEntry, map[string]string, error) {
	if !utf8.Valid(header) {
		return nil, nil, fmt.Errorf("header is not valid UTF-8: %w", ErrHeader)
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("header is not a JSON object: %w", ErrHeader)
	}
	entries := make(map[string]headerEntry)
	var meta map[string]string
	seenMeta := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("header JSON: %w: %w", ErrHeader, err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("header JSON: key %v is not a string: %w", tok, ErrHeader)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("header JSON at %q: %w: %w", name, ErrHeader, err)
		}
		if _, dup := entries[name]; dup || (name == metadataKey && seenMeta) {
			return nil, nil, fmt.Errorf("header names %q twice: %w", name, ErrHeader)
		}
		if name == metadataKey {
			seenMeta = true
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, nil, fmt.Errorf("%s must map strings to strings: %w: %w", metadataKey, ErrHeader, err)
			}
			continue
		}
		var e headerEntry
		ed := json.NewDecoder(bytes.NewReader(raw))
		ed.DisallowUnknownFields()
		if err := ed.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w: %w", name, ErrHeader, err)
		}
		entries[name] = e
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, fmt.Errorf("header JSON: %w: %w", ErrHeader, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("header has bytes after its JSON object: %w", ErrHeader)
	}
	return entries, meta, nil
}
