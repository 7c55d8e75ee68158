package tb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Fields the reader needs beyond those the writer writes (event.go), from
// tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto,
// tensor.proto, tensor_shape.proto and types.proto.
const (
	sessionStart = 1 // SessionLog.START

	tensorContent  = 4  // bytes, little-endian values
	tensorFloatVal = 5  // repeated float (packed)
	tensorDouble   = 6  // repeated double (packed)
	tensorIntVal   = 7  // repeated int32 (packed): DT_INT32, DT_INT16, DT_INT8, DT_UINT8
	tensorInt64Val = 10 // repeated int64 (packed)
	tensorHalfVal  = 13 // repeated int32 (packed) holding the 16 bits of DT_HALF and DT_BFLOAT16

	shapeDim         = 2 // TensorShapeProto.dim (repeated Dim)
	shapeUnknownRank = 3 // bool
	dimSize          = 1 // Dim.size, int64 (-1 unknown)
)

// DataType values (types.proto) of the numeric tensors read as scalars.
const (
	dtFloat    = 1
	dtDouble   = 2
	dtInt32    = 3
	dtUint8    = 4
	dtInt16    = 5
	dtInt8     = 6
	dtInt64    = 9
	dtBfloat16 = 14
	dtHalf     = 19
)

// Fields of the hparams plugin's data (tensorboard/plugins/hparams/plugin_data.proto)
// and of google/protobuf/struct.proto's Value, for a session's hyperparameters.
const (
	pluginContent = 2 // SummaryMetadata.PluginData.content, bytes

	hparamsSessionStart = 3 // HParamsPluginData.session_start_info
	sessionHParams      = 1 // SessionStartInfo.hparams, map<string, Value>
	mapKey, mapValue    = 1, 2

	valueNull   = 1 // Value.null_value
	valueNumber = 2 // Value.number_value, double
	valueString = 3 // Value.string_value
	valueBool   = 4 // Value.bool_value
)

// Value is one scalar of an Event: its tag and value.
type Value struct {
	Tag   string
	Value float64
}

// Text is one text summary of an Event: the text plugin's string tensor, as
// SummaryWriter.add_text writes it (under the tag "<tag>/text_summary").
type Text struct {
	Tag  string
	Text string
}

// HParam is one hyperparameter of a session's start — the hparams plugin's
// session_start_info, as SummaryWriter.add_hparams, Keras and Lightning write it:
// its name, and its value as text (a number as strconv writes it, a string quoted,
// true, false or null).
type HParam struct {
	Name  string
	Value string
}

// Event is one record of an event file, as the reader passes it on: when and at which
// step it was written, its scalar summaries, and the settings some summaries hold.
type Event struct {
	WallTime float64 // seconds since the Unix epoch
	Step     int64
	// Restart marks a SessionLog START: the writer started over at Step, and values
	// at Step or later that were read before are superseded (TensorBoard purges them).
	Restart bool
	// Values are the scalars of the event's summary: simple_value, and tensors holding
	// exactly one number (float, double, half, bfloat16 or integer) written without a
	// plugin or by the scalars plugin. Images, histograms and other plugins' data
	// are left out. The slice is reused by the next record: copy what you keep.
	Values []Value
	// Texts are the event's text summaries; HParams the hyperparameters of a
	// session start it holds. Both slices are reused like Values.
	Texts   []Text
	HParams []HParam
}

var errMalformed = errors.New("malformed protocol buffer")

// field is one decoded field of a message: its number and wire type, the value of a
// varint or fixed field in x, the payload of a length-delimited field in b.
type field struct {
	num protowire.Number
	typ protowire.Type
	x   uint64
	b   []byte
}

// nextField decodes the field at the start of b and returns the rest of b.
func nextField(b []byte) (field, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, nil, fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))
	}
	b = b[n:]
	f := field{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		f.x, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.x = uint64(v)
	case protowire.Fixed64Type:
		f.x, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		f.b, n = protowire.ConsumeBytes(b)
	default: // groups, long obsolete: skip them whole
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return field{}, nil, fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
	}
	return f, b[n:], nil
}

// unmarshalEvent decodes one Event record into ev, reusing ev.Values. Fields it does not
// need (graphs, run metadata, file_version …) are skipped by their wire type.
func unmarshalEvent(b []byte, ev *Event, tags *interner) error {
	*ev = Event{Values: ev.Values[:0], Texts: ev.Texts[:0], HParams: ev.HParams[:0]}
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		switch {
		case f.num == eventWallTime && f.typ == protowire.Fixed64Type:
			ev.WallTime = math.Float64frombits(f.x)
		case f.num == eventStep && f.typ == protowire.VarintType:
			ev.Step = int64(f.x)
		case f.num == eventSummary && f.typ == protowire.BytesType:
			if err := unmarshalSummary(f.b, ev, tags); err != nil {
				return err
			}
		case f.num == eventSessionLog && f.typ == protowire.BytesType:
			for s := f.b; len(s) > 0; {
				g, rest, err := nextField(s)
				if err != nil {
					return err
				}
				s = rest
				if g.num == sessionStatus && g.typ == protowire.VarintType && g.x == sessionStart {
					ev.Restart = true
				}
			}
		}
	}
	return nil
}

func unmarshalSummary(b []byte, ev *Event, tags *interner) error {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		if f.num != summaryValue || f.typ != protowire.BytesType {
			continue
		}
		if err := unmarshalValue(f.b, ev, tags); err != nil {
			return err
		}
	}
	return nil
}

// unmarshalValue appends the Summary.Value in b to ev.Values when it holds a scalar,
// to ev.Texts when it is a text summary, to ev.HParams when it is a session start's
// hyperparameters.
func unmarshalValue(b []byte, ev *Event, tags *interner) error {
	var (
		tag          []byte
		simple       float32
		hasSimple    bool
		tensor       []byte
		hasTensor    bool
		plugin       []byte
		content      []byte // the plugin's data
		otherPayload bool   // image, histogram, audio …: not a scalar whatever the rest says
	)
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		switch {
		case f.num == valueTag && f.typ == protowire.BytesType:
			tag = f.b
		case f.num == valueSimpleValue && f.typ == protowire.Fixed32Type:
			simple, hasSimple = math.Float32frombits(uint32(f.x)), true
		case f.num == valueTensor && f.typ == protowire.BytesType:
			tensor, hasTensor = f.b, true
		case f.num == valueMetadata && f.typ == protowire.BytesType:
			if plugin, content, err = pluginData(f.b); err != nil {
				return err
			}
		case f.num >= 3 && f.num <= 6: // obsolete histogram, image, histo, audio
			otherPayload = true
		}
	}
	if tag == nil || otherPayload {
		return nil
	}
	switch {
	case hasSimple:
		ev.Values = append(ev.Values, Value{Tag: tags.get(tag), Value: float64(simple)})
	case hasTensor && (len(plugin) == 0 || string(plugin) == "scalars"):
		v, ok, err := tensorScalar(tensor)
		if err != nil {
			return err
		}
		if ok {
			ev.Values = append(ev.Values, Value{Tag: tags.get(tag), Value: v})
		}
	case hasTensor && string(plugin) == "text":
		text, ok, err := tensorString(tensor)
		if err != nil {
			return err
		}
		if ok {
			ev.Texts = append(ev.Texts, Text{Tag: tags.get(tag), Text: text})
		}
	case string(plugin) == "hparams":
		var err error
		ev.HParams, err = appendSessionHParams(ev.HParams, content)
		return err
	}
	return nil
}

// pluginData returns SummaryMetadata.plugin_data's plugin_name and content.
func pluginData(b []byte) (name, content []byte, err error) {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return nil, nil, err
		}
		b = rest
		if f.num != metadataPluginData || f.typ != protowire.BytesType {
			continue
		}
		for p := f.b; len(p) > 0; {
			g, rest, err := nextField(p)
			if err != nil {
				return nil, nil, err
			}
			p = rest
			switch {
			case g.num == pluginName && g.typ == protowire.BytesType:
				name = g.b
			case g.num == pluginContent && g.typ == protowire.BytesType:
				content = g.b
			}
		}
	}
	return name, content, nil
}

// tensorString reads a TensorProto holding exactly one string (DT_STRING, a scalar
// or a vector of one, as the text plugin writes).
func tensorString(b []byte) (s string, ok bool, err error) {
	var (
		dtype uint64
		elems int64 = 1
		vals  [][]byte
	)
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return "", false, err
		}
		b = rest
		switch {
		case f.num == tensorDtype && f.typ == protowire.VarintType:
			dtype = f.x
		case f.num == tensorShape && f.typ == protowire.BytesType:
			if elems, err = shapeElems(f.b); err != nil {
				return "", false, err
			}
		case f.num == tensorStringVal && f.typ == protowire.BytesType:
			vals = append(vals, f.b)
		}
	}
	if dtype != dtString || elems != 1 || len(vals) != 1 {
		return "", false, nil
	}
	return string(vals[0]), true, nil
}

// appendSessionHParams appends the hyperparameters of the HParamsPluginData in b
// when it is a session start (an experiment's description and a session's end hold
// none). Values other than numbers, strings, booleans and null are left out, as
// TensorBoard does.
func appendSessionHParams(dst []HParam, b []byte) ([]HParam, error) {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return dst, err
		}
		b = rest
		if f.num != hparamsSessionStart || f.typ != protowire.BytesType {
			continue
		}
		for s := f.b; len(s) > 0; {
			g, rest, err := nextField(s)
			if err != nil {
				return dst, err
			}
			s = rest
			if g.num != sessionHParams || g.typ != protowire.BytesType {
				continue
			}
			h, ok, err := mapEntry(g.b)
			if err != nil {
				return dst, err
			}
			if ok {
				dst = append(dst, h)
			}
		}
	}
	return dst, nil
}

// mapEntry reads one entry of the hparams map: a name and a google.protobuf.Value.
func mapEntry(b []byte) (h HParam, ok bool, err error) {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return h, false, err
		}
		b = rest
		switch {
		case f.num == mapKey && f.typ == protowire.BytesType:
			h.Name = string(f.b)
		case f.num == mapValue && f.typ == protowire.BytesType:
			if h.Value, ok, err = valueText(f.b); err != nil {
				return h, false, err
			}
		}
	}
	return h, ok && h.Name != "", nil
}

// valueText writes a scalar google.protobuf.Value as text.
func valueText(b []byte) (string, bool, error) {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return "", false, err
		}
		b = rest
		switch {
		case f.num == valueNull && f.typ == protowire.VarintType:
			return "null", true, nil
		case f.num == valueNumber && f.typ == protowire.Fixed64Type:
			return strconv.FormatFloat(math.Float64frombits(f.x), 'g', -1, 64), true, nil
		case f.num == valueString && f.typ == protowire.BytesType:
			return strconv.Quote(string(f.b)), true, nil
		case f.num == valueBool && f.typ == protowire.VarintType:
			return strconv.FormatBool(f.x != 0), true, nil
		}
	}
	return "", false, nil
}

// tensorScalar reads a TensorProto holding exactly one number. ok is false for
// anything else (strings, several elements, unknown shapes, unsupported dtypes).
func tensorScalar(b []byte) (v float64, ok bool, err error) {
	var (
		dtype    uint64
		elems    int64 = 1
		content  []byte
		typed    []byte // the packed repeated field matching dtype, or one unpacked value
		typedNum protowire.Number
		unpacked field
		hasUnp   bool
	)
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return 0, false, err
		}
		b = rest
		switch f.num {
		case tensorDtype:
			dtype = f.x
		case tensorShape:
			if elems, err = shapeElems(f.b); err != nil {
				return 0, false, err
			}
		case tensorContent:
			content = f.b
		case tensorFloatVal, tensorDouble, tensorIntVal, tensorInt64Val, tensorHalfVal:
			if f.typ == protowire.BytesType {
				typed, typedNum = f.b, f.num
			} else if !hasUnp || unpacked.num != f.num {
				unpacked, hasUnp = f, true
			}
		}
	}
	if elems != 1 {
		return 0, false, nil
	}
	want := valField(dtype)
	if want == 0 {
		return 0, false, nil
	}
	if len(content) > 0 {
		return fromContent(dtype, content)
	}
	if typed != nil && typedNum == want {
		return fromPacked(dtype, typed)
	}
	if hasUnp && unpacked.num == want {
		return fromUnpacked(dtype, unpacked)
	}
	return 0, false, nil
}

// valField is the TensorProto field holding values of dtype, 0 when not numeric.
func valField(dtype uint64) protowire.Number {
	switch dtype {
	case dtFloat:
		return tensorFloatVal
	case dtDouble:
		return tensorDouble
	case dtInt32, dtInt16, dtInt8, dtUint8:
		return tensorIntVal
	case dtInt64:
		return tensorInt64Val
	case dtHalf, dtBfloat16:
		return tensorHalfVal
	}
	return 0
}

// shapeElems returns the number of elements of a TensorShapeProto (1 for a scalar,
// -1 when unknown).
func shapeElems(b []byte) (int64, error) {
	n := int64(1)
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return 0, err
		}
		b = rest
		switch {
		case f.num == shapeUnknownRank && f.x != 0:
			return -1, nil
		case f.num == shapeDim && f.typ == protowire.BytesType:
			size := int64(0) // a Dim without size has size 0
			for d := f.b; len(d) > 0; {
				g, rest, err := nextField(d)
				if err != nil {
					return 0, err
				}
				d = rest
				if g.num == dimSize && g.typ == protowire.VarintType {
					size = int64(g.x)
				}
			}
			if size < 0 {
				return -1, nil
			}
			if size > 1 && n > math.MaxInt32 {
				return -1, nil
			}
			n *= size
		}
	}
	return n, nil
}

// fromContent reads the one value of tensor_content (little-endian, as TensorFlow
// writes on every platform it supports).
func fromContent(dtype uint64, c []byte) (float64, bool, error) {
	if size := elemSize(dtype); size == 0 || len(c) != size {
		return 0, false, nil
	}
	switch dtype {
	case dtFloat:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(c))), true, nil
	case dtDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(c)), true, nil
	case dtInt32:
		return float64(int32(binary.LittleEndian.Uint32(c))), true, nil
	case dtInt64:
		return float64(int64(binary.LittleEndian.Uint64(c))), true, nil
	case dtInt16:
		return float64(int16(binary.LittleEndian.Uint16(c))), true, nil
	case dtInt8:
		return float64(int8(c[0])), true, nil
	case dtUint8:
		return float64(c[0]), true, nil
	case dtHalf:
		return halfToFloat(binary.LittleEndian.Uint16(c)), true, nil
	default: // dtBfloat16
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(c)) << 16)), true, nil
	}
}

// elemSize is the width in tensor_content of one value of dtype, 0 when not numeric.
func elemSize(dtype uint64) int {
	switch dtype {
	case dtDouble, dtInt64:
		return 8
	case dtFloat, dtInt32:
		return 4
	case dtInt16, dtHalf, dtBfloat16:
		return 2
	case dtInt8, dtUint8:
		return 1
	}
	return 0
}

// fromPacked reads the first value of a packed repeated field.
func fromPacked(dtype uint64, p []byte) (float64, bool, error) {
	if len(p) == 0 {
		return 0, false, nil
	}
	switch dtype {
	case dtFloat:
		x, n := protowire.ConsumeFixed32(p)
		if n < 0 {
			return 0, false, errMalformed
		}
		return float64(math.Float32frombits(x)), true, nil
	case dtDouble:
		x, n := protowire.ConsumeFixed64(p)
		if n < 0 {
			return 0, false, errMalformed
		}
		return math.Float64frombits(x), true, nil
	}
	x, n := protowire.ConsumeVarint(p)
	if n < 0 {
		return 0, false, errMalformed
	}
	return fromVarint(dtype, x), true, nil
}

func fromUnpacked(dtype uint64, f field) (float64, bool, error) {
	switch {
	case dtype == dtFloat && f.typ == protowire.Fixed32Type:
		return float64(math.Float32frombits(uint32(f.x))), true, nil
	case dtype == dtDouble && f.typ == protowire.Fixed64Type:
		return math.Float64frombits(f.x), true, nil
	case dtype != dtFloat && dtype != dtDouble && f.typ == protowire.VarintType:
		return fromVarint(dtype, f.x), true, nil
	}
	return 0, false, nil
}

// fromVarint converts an int_val, int64_val or half_val varint.
func fromVarint(dtype uint64, x uint64) float64 {
	switch dtype {
	case dtHalf:
		return halfToFloat(uint16(x))
	case dtBfloat16:
		return float64(math.Float32frombits(uint32(uint16(x)) << 16))
	case dtInt64:
		return float64(int64(x))
	default: // int32 and narrower, sign-extended to 64 bits on the wire
		return float64(int32(x))
	}
}

// halfToFloat converts IEEE 754 binary16 bits.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// interner shares one string per tag: a run logs the same few hundred tags at
// every step, and the reader should not allocate them again each time.
type interner struct{ m map[string]string }

// maxInterned bounds the interner; tags beyond it are allocated each time.
const maxInterned = 1 << 14

func (in *interner) get(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = make(map[string]string)
	}
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}
