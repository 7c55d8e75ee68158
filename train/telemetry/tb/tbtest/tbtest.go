// Package tbtest builds TensorBoard event files for tests from the specifications
// alone, sharing no code with package tb: the TFRecord framing
// (tensorflow/core/lib/io/record_writer.cc: uint64 length, uint32 masked CRC32C of
// the length, data, uint32 masked CRC32C of the data, all little-endian), the
// protocol buffer wire format (varint keys field<<3|wire type; wire types 0 varint,
// 1 fixed64, 2 length-delimited, 5 fixed32) and the field numbers of event.proto,
// summary.proto and tensor.proto. The CRC is computed bit by bit from the
// Castagnoli polynomial, not with hash/crc32.
package tbtest

import (
	"encoding/binary"
	"math"
)

// CRC32C is CRC-32C (reflected polynomial 0x82F63B78), one bit at a time.
func CRC32C(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82f63b78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// Mask is the TFRecord mask: rotate right by 15 bits, add 0xa282ead8.
func Mask(crc uint32) uint32 { return (crc>>15 | crc<<17) + 0xa282ead8 }

// Record frames data as one TFRecord.
func Record(data []byte) []byte {
	var out []byte
	out = binary.LittleEndian.AppendUint64(out, uint64(len(data)))
	out = binary.LittleEndian.AppendUint32(out, Mask(CRC32C(out[:8])))
	out = append(out, data...)
	return binary.LittleEndian.AppendUint32(out, Mask(CRC32C(data)))
}

// Varint is x as a base-128 varint, low groups first.
func Varint(x uint64) []byte {
	var out []byte
	for x >= 0x80 {
		out = append(out, byte(x)|0x80)
		x >>= 7
	}
	return append(out, byte(x))
}

// Key is a field key: the field number shifted left by 3, or'd with the wire type.
func Key(num, wire int) []byte { return Varint(uint64(num)<<3 | uint64(wire)) }

// VarintField is field num holding x as a varint (wire type 0).
func VarintField(num int, x uint64) []byte { return append(Key(num, 0), Varint(x)...) }

// Fixed64Field is field num holding x as 8 little-endian bytes (wire type 1).
func Fixed64Field(num int, x uint64) []byte {
	return binary.LittleEndian.AppendUint64(Key(num, 1), x)
}

// Fixed32Field is field num holding x as 4 little-endian bytes (wire type 5).
func Fixed32Field(num int, x uint32) []byte {
	return binary.LittleEndian.AppendUint32(Key(num, 5), x)
}

// BytesField is field num holding b, length first (wire type 2).
func BytesField(num int, b []byte) []byte {
	out := append(Key(num, 2), Varint(uint64(len(b)))...)
	return append(out, b...)
}

// Cat concatenates byte strings.
func Cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Event fields: wall_time 1 (double), step 2 (int64), file_version 3, summary 5,
// session_log 7. Summary: value 1. Value: tag 1, simple_value 2 (float), image 4,
// tensor 8, metadata 9. SummaryMetadata: plugin_data 1 { plugin_name 1 }.

// EventHeader is an Event's wall_time and step.
func EventHeader(wall float64, step int64) []byte {
	return Cat(Fixed64Field(1, math.Float64bits(wall)), VarintField(2, uint64(step)))
}

// Version is the Event that opens every event file: file_version "brain.Event:2".
func Version(wall float64) []byte {
	return Cat(Fixed64Field(1, math.Float64bits(wall)), BytesField(3, []byte("brain.Event:2")))
}

// Simple is one Event holding tag=value pairs as simple_value, the way
// PyTorch's SummaryWriter.add_scalar writes by default (one value per event) and
// add_scalars or Keras write several.
func Simple(wall float64, step int64, kv ...any) []byte {
	var summary []byte
	for i := 0; i < len(kv); i += 2 {
		v := Cat(BytesField(1, []byte(kv[i].(string))), Fixed32Field(2, math.Float32bits(float32(kv[i+1].(float64)))))
		summary = append(summary, BytesField(1, v)...)
	}
	return Cat(EventHeader(wall, step), BytesField(5, summary))
}

// TensorValue is a Summary.Value holding a tensor, with a plugin name when given
// ("scalars" is what tf.summary.scalar and SummaryWriter(new_style=True) write).
func TensorValue(tag string, tensor []byte, plugin string) []byte {
	v := BytesField(1, []byte(tag))
	if plugin != "" {
		v = append(v, BytesField(9, BytesField(1, BytesField(1, []byte(plugin))))...)
	}
	return append(v, BytesField(8, tensor)...)
}

// TextValue is a Summary.Value holding a text summary as PyTorch's
// SummaryWriter.add_text writes it: the tag with "/text_summary" appended, the
// plugin "text", a DT_STRING tensor of shape [1] holding the text.
func TextValue(tag, text string) []byte {
	tensor := Cat(VarintField(1, 7), Shape(1), BytesField(8, []byte(text)))
	return TensorValue(tag+"/text_summary", tensor, "text")
}

// HParam is one hyperparameter of HParamsValue: Value is a float64, a string, a
// bool or nil.
type HParam struct {
	Name  string
	Value any
}

// HParamsValue is the Summary.Value holding a session's start as the hparams plugin
// defines it (tensorboard/plugins/hparams/plugin_data.proto) and PyTorch's
// SummaryWriter.add_hparams writes it: the tag "_hparams_/session_start_info", no
// tensor, SummaryMetadata { plugin_data 1 { plugin_name 1: "hparams", content 2:
// HParamsPluginData { session_start_info 3: SessionStartInfo { hparams 1: map
// entries { key 1, value 2: google.protobuf.Value } } } } }, the plugin data
// version (field 1) 0 and so absent. Value (struct.proto): null_value 1 (varint),
// number_value 2 (double), string_value 3, bool_value 4 (varint).
func HParamsValue(hparams ...HParam) []byte {
	var ssi []byte
	for _, h := range hparams {
		var v []byte
		switch x := h.Value.(type) {
		case nil:
			v = VarintField(1, 0)
		case float64:
			v = Fixed64Field(2, math.Float64bits(x))
		case string:
			v = BytesField(3, []byte(x))
		case bool:
			b := uint64(0)
			if x {
				b = 1
			}
			v = VarintField(4, b)
		}
		ssi = append(ssi, BytesField(1, Cat(BytesField(1, []byte(h.Name)), BytesField(2, v)))...)
	}
	content := BytesField(3, ssi)
	meta := BytesField(1, Cat(BytesField(1, []byte("hparams")), BytesField(2, content)))
	return Cat(BytesField(1, []byte("_hparams_/session_start_info")), BytesField(9, meta))
}

// HParamsExperimentValue is the Summary.Value add_hparams writes beside the session
// start: "_hparams_/experiment", HParamsPluginData { experiment 2: Experiment {
// hparam_infos 4: HParamInfo { name 1 } } } (api.proto), naming the hyperparameters
// without values.
func HParamsExperimentValue(names ...string) []byte {
	var exp []byte
	for _, n := range names {
		exp = append(exp, BytesField(4, BytesField(1, []byte(n)))...)
	}
	meta := BytesField(1, Cat(BytesField(1, []byte("hparams")), BytesField(2, BytesField(2, exp))))
	return Cat(BytesField(1, []byte("_hparams_/experiment")), BytesField(9, meta))
}

// SummaryEvent is one Event whose Summary holds the given Summary.Values.
func SummaryEvent(wall float64, step int64, values ...[]byte) []byte {
	var summary []byte
	for _, v := range values {
		summary = append(summary, BytesField(1, v)...)
	}
	return Cat(EventHeader(wall, step), BytesField(5, summary))
}

// TensorProto: dtype 1, tensor_shape 2 { dim 2 { size 1 } }, tensor_content 4,
// float_val 5, double_val 6, int_val 7, string_val 8, int64_val 10, half_val 13.
// DataType: DT_FLOAT 1, DT_DOUBLE 2, DT_INT32 3, DT_STRING 7, DT_INT64 9,
// DT_BFLOAT16 14, DT_HALF 19.

// Shape is a tensor_shape field with the given dimension sizes (none: a scalar).
func Shape(dims ...int64) []byte {
	var out []byte
	for _, d := range dims {
		out = append(out, BytesField(2, VarintField(1, uint64(d)))...)
	}
	return BytesField(2, out)
}

// FloatTensor is a DT_FLOAT scalar TensorProto with a packed float_val, as
// tf.summary.scalar writes one.
func FloatTensor(v float32) []byte {
	return Cat(VarintField(1, 1), Shape(), BytesField(5, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))))
}

// SessionStart is an Event holding SessionLog{status: START}, TensorBoard's
// restart marker.
func SessionStart(wall float64, step int64) []byte {
	return Cat(EventHeader(wall, step), BytesField(7, Cat(VarintField(1, 1), BytesField(3, []byte("restart")))))
}

// Records frames each event as a record, in order.
func Records(events ...[]byte) []byte {
	var out []byte
	for _, e := range events {
		out = append(out, Record(e)...)
	}
	return out
}

// AppendScalarRecord appends one framed record holding the Event Simple(wall,
// step, tag, v) builds, without its allocations: for writing long synthetic logs
// (a million steps) quickly.
func AppendScalarRecord(dst []byte, wall float64, step int64, tag string, v float32) []byte {
	var ev [64]byte
	e := ev[:0]
	e = append(e, 0x09) // wall_time, fixed64
	e = binary.LittleEndian.AppendUint64(e, math.Float64bits(wall))
	e = append(e, 0x10) // step, varint
	e = binary.AppendUvarint(e, uint64(step))
	valueLen := 2 + len(tag) + 5 // tag field, then simple_value
	summaryLen := 1 + uvarintLen(uint64(valueLen)) + valueLen
	e = append(e, 0x2a) // summary, bytes
	e = binary.AppendUvarint(e, uint64(summaryLen))
	e = append(e, 0x0a) // Summary.value, bytes
	e = binary.AppendUvarint(e, uint64(valueLen))
	e = append(e, 0x0a, byte(len(tag))) // Value.tag (a tag under 128 bytes)
	e = append(e, tag...)
	e = append(e, 0x15) // Value.simple_value, fixed32
	e = binary.LittleEndian.AppendUint32(e, math.Float32bits(v))
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(e)))
	binary.LittleEndian.PutUint32(hdr[8:], Mask(CRC32C(hdr[:8])))
	dst = append(dst, hdr[:]...)
	dst = append(dst, e...)
	return binary.LittleEndian.AppendUint32(dst, Mask(CRC32C(e)))
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
