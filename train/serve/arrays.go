package serve

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"unsafe"
)

// Answers that carry arrays (observations, masks, per-environment rewards)
// are sent in the encoding the session chose:
//
//   - "json": one JSON object; each array is a member holding nested lists
//     of numbers (float32 values printed shortest, so a client that casts
//     them back to float32 gets the exact bits; booleans as true/false).
//   - "npy": Content-Type application/x-pixelis-npy, a length-prefixed frame
//
//     u32 little-endian H · H bytes of JSON header · the arrays
//
//     The header is the same object as in the JSON encoding without the
//     arrays, plus "arrays": [{"name", "offset", "length"}], each an .npy
//     file (format 1.0: little-endian data, C order) at offset bytes after
//     the header; the header is padded with spaces so that every array
//     starts on a multiple of 64 bytes from the start of the body.

// Encodings a session may choose.
const (
	encodingJSON = "json"
	encodingNPY  = "npy"
)

// npyContentType is the media type of the npy encoding.
const npyContentType = "application/x-pixelis-npy"

// array is one named array of an answer, little-endian on the wire.
type array struct {
	name  string
	shape []int
	f32   []float32
	f64   []float64
	u8    []uint8
	b     []bool
	i32   []int32
}

func (a *array) dtype() (descr string, size int) {
	switch {
	case a.f32 != nil:
		return "<f4", 4
	case a.f64 != nil:
		return "<f8", 8
	case a.u8 != nil:
		return "|u1", 1
	case a.b != nil:
		return "|b1", 1
	}
	return "<i4", 4
}

func (a *array) len() int {
	n := 1
	for _, d := range a.shape {
		n *= d
	}
	return n
}

// littleEndian is true when the host's memory order is the wire's, so
// arrays are copied as they lie in memory.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// appendRaw appends the array's elements, little-endian.
func (a *array) appendRaw(b []byte) []byte {
	n := a.len()
	switch {
	case a.u8 != nil:
		return append(b, a.u8[:n]...)
	case a.b != nil:
		for _, v := range a.b[:n] {
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
		return b
	case a.f32 != nil && littleEndian && n > 0:
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&a.f32[0])), 4*n)...)
	case a.f32 != nil:
		for _, v := range a.f32[:n] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	case a.f64 != nil:
		for _, v := range a.f64[:n] {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	for _, v := range a.i32[:n] {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// npyAlign is the alignment of every array in an npy frame, and of the data
// after each .npy header (numpy pads its headers to 64 bytes too).
const npyAlign = 64

// appendNPY appends the array as an .npy file (format 1.0) whose data
// starts on a multiple of npyAlign from start (the offset b[0] will have in
// the body), then pads to the next multiple.
func (a *array) appendNPY(b []byte, start int) []byte {
	descr, _ := a.dtype()
	shape := "("
	for i, d := range a.shape {
		if i > 0 {
			shape += " "
		}
		shape += strconv.Itoa(d) + ","
	}
	if len(a.shape) > 1 {
		shape = shape[:len(shape)-1]
	}
	shape += ")"
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	at := start + len(b)
	hlen := len(dict) + 1 // the closing newline
	pad := (npyAlign - (at+10+hlen)%npyAlign) % npyAlign
	b = append(b, "\x93NUMPY\x01\x00"...)
	b = binary.LittleEndian.AppendUint16(b, uint16(hlen+pad))
	b = append(b, dict...)
	for range pad {
		b = append(b, ' ')
	}
	b = append(b, '\n')
	b = a.appendRaw(b)
	for (start+len(b))%npyAlign != 0 {
		b = append(b, 0)
	}
	return b
}

// appendJSON appends the array as nested JSON lists.
func (a *array) appendJSON(b []byte) []byte {
	var k int
	var walk func(dim int)
	walk = func(dim int) {
		b = append(b, '[')
		for i := range a.shape[dim] {
			if i > 0 {
				b = append(b, ',')
			}
			if dim+1 < len(a.shape) {
				walk(dim + 1)
				continue
			}
			switch {
			case a.f32 != nil:
				b = appendFloat(b, float64(a.f32[k]), 32)
			case a.f64 != nil:
				b = appendFloat(b, a.f64[k], 64)
			case a.u8 != nil:
				b = strconv.AppendUint(b, uint64(a.u8[k]), 10)
			case a.b != nil:
				b = strconv.AppendBool(b, a.b[k])
			default:
				b = strconv.AppendInt(b, int64(a.i32[k]), 10)
			}
			k++
		}
		b = append(b, ']')
	}
	if len(a.shape) == 0 {
		return append(b, "null"...)
	}
	walk(0)
	return b
}

// appendFloat writes a finite float shortest; the world computes none
// other, but a NaN or infinity would make the JSON invalid, so it is null.
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// arrayInfo is an array's entry in an npy frame's header.
type arrayInfo struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

// frameBuf holds the buffers of an answer, reused from answer to answer.
type frameBuf struct{ body, arrays []byte }

// encodeFrame encodes head (a JSON object) and the arrays in encoding into
// fb. It returns the body (valid until fb is used again) and its content
// type.
func encodeFrame(fb *frameBuf, encoding string, head any, arrays []*array) ([]byte, string, error) {
	hj, err := json.Marshal(head)
	if err != nil || len(hj) < 2 || hj[len(hj)-1] != '}' {
		return nil, "", fmt.Errorf("encode answer header: %v", err)
	}
	b := fb.body[:0]
	defer func() { fb.body = b[:0] }()
	if encoding != encodingNPY {
		b = append(b, hj[:len(hj)-1]...)
		sep := len(hj) > 2
		for _, a := range arrays {
			if sep {
				b = append(b, ',')
			}
			sep = true
			b = strconv.AppendQuote(b, a.name)
			b = append(b, ':')
			b = a.appendJSON(b)
		}
		b = append(b, '}', '\n')
		return b, "application/json", nil
	}
	// The arrays first, into their own section, then the header that lists them.
	data := fb.arrays[:0]
	defer func() { fb.arrays = data[:0] }()
	infos := make([]arrayInfo, len(arrays))
	for i, a := range arrays {
		off := len(data)
		data = a.appendNPY(data, 0)
		infos[i] = arrayInfo{Name: a.name, Offset: off, Length: len(data) - off}
	}
	list, _ := json.Marshal(infos)
	h := append(hj[:len(hj)-1:len(hj)-1], `,"arrays":`...)
	if len(hj) == 2 {
		h = append(hj[:1:1], `"arrays":`...)
	}
	h = append(append(h, list...), '}')
	for (4+len(h))%npyAlign != 0 {
		h = append(h, ' ')
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	b = append(append(b, h...), data...)
	return b, npyContentType, nil
}

// writeFrame sends an answer with arrays in the session's encoding.
func (s *Server) writeFrame(w http.ResponseWriter, r *http.Request, status int, encoding string, head any, arrays []*array) {
	s.writeFrameBuf(w, r, &frameBuf{}, status, encoding, head, arrays)
}

// writeFrameBuf is writeFrame with the buffers of fb.
func (s *Server) writeFrameBuf(w http.ResponseWriter, r *http.Request, fb *frameBuf, status int, encoding string, head any, arrays []*array) {
	b, ctype, err := encodeFrame(fb, encoding, head, arrays)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeBody(w, status, ctype, b)
}

func writeBody(w http.ResponseWriter, status int, ctype string, b []byte) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
