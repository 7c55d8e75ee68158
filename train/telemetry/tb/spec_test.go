package tb

import (
	"encoding/binary"
	"math"
)

// An encoder for test fixtures written from the specifications alone, sharing no
// code with the package: the TFRecord framing (tensorflow/core/lib/io/record_writer.cc:
// uint64 length, uint32 masked CRC32C of the length, data, uint32 masked CRC32C of
// the data, all little-endian), the protocol buffer wire format (varint keys
// field<<3|wire type; wire types 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32)
// and the field numbers of event.proto, summary.proto and tensor.proto. The CRC is
// computed bit by bit from the Castagnoli polynomial, not with hash/crc32.

// specCRC32C is CRC-32C (reflected polynomial 0x82F63B78), one bit at a time.
func specCRC32C(b []byte) uint32 {
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

// specMask is the TFRecord mask: rotate right by 15 bits, add 0xa282ead8.
func specMask(crc uint32) uint32 { return (crc>>15 | crc<<17) + 0xa282ead8 }

func specRecord(data []byte) []byte {
	var out []byte
	out = binary.LittleEndian.AppendUint64(out, uint64(len(data)))
	out = binary.LittleEndian.AppendUint32(out, specMask(specCRC32C(out[:8])))
	out = append(out, data...)
	return binary.LittleEndian.AppendUint32(out, specMask(specCRC32C(data)))
}

func specVarint(x uint64) []byte {
	var out []byte
	for x >= 0x80 {
		out = append(out, byte(x)|0x80)
		x >>= 7
	}
	return append(out, byte(x))
}

func specKey(num, wire int) []byte { return specVarint(uint64(num)<<3 | uint64(wire)) }

func pbVarint(num int, x uint64) []byte { return append(specKey(num, 0), specVarint(x)...) }

func pbFixed64(num int, x uint64) []byte {
	return binary.LittleEndian.AppendUint64(specKey(num, 1), x)
}

func pbFixed32(num int, x uint32) []byte {
	return binary.LittleEndian.AppendUint32(specKey(num, 5), x)
}

func pbBytes(num int, b []byte) []byte {
	out := append(specKey(num, 2), specVarint(uint64(len(b)))...)
	return append(out, b...)
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Event fields: wall_time 1 (double), step 2 (int64), file_version 3, summary 5,
// session_log 7. Summary: value 1. Value: tag 1, simple_value 2 (float), image 4,
// tensor 8, metadata 9. SummaryMetadata: plugin_data 1 { plugin_name 1 }.

func specEventHeader(wall float64, step int64) []byte {
	return cat(pbFixed64(1, math.Float64bits(wall)), pbVarint(2, uint64(step)))
}

func specVersion(wall float64) []byte {
	return cat(pbFixed64(1, math.Float64bits(wall)), pbBytes(3, []byte("brain.Event:2")))
}

// specSimple is one Event holding tag=value pairs as simple_value, the way
// PyTorch's SummaryWriter.add_scalar writes by default (one value per event) and
// add_scalars or Keras write several.
func specSimple(wall float64, step int64, kv ...any) []byte {
	var summary []byte
	for i := 0; i < len(kv); i += 2 {
		v := cat(pbBytes(1, []byte(kv[i].(string))), pbFixed32(2, math.Float32bits(float32(kv[i+1].(float64)))))
		summary = append(summary, pbBytes(1, v)...)
	}
	return cat(specEventHeader(wall, step), pbBytes(5, summary))
}

// specTensorValue is a Summary.Value holding a tensor, with a plugin name when given
// ("scalars" is what tf.summary.scalar and SummaryWriter(new_style=True) write).
func specTensorValue(tag string, tensor []byte, plugin string) []byte {
	v := pbBytes(1, []byte(tag))
	if plugin != "" {
		v = append(v, pbBytes(9, pbBytes(1, pbBytes(1, []byte(plugin))))...)
	}
	return append(v, pbBytes(8, tensor)...)
}

func specSummaryEvent(wall float64, step int64, values ...[]byte) []byte {
	var summary []byte
	for _, v := range values {
		summary = append(summary, pbBytes(1, v)...)
	}
	return cat(specEventHeader(wall, step), pbBytes(5, summary))
}

// TensorProto: dtype 1, tensor_shape 2 { dim 2 { size 1 } }, tensor_content 4,
// float_val 5, double_val 6, int_val 7, string_val 8, int64_val 10, half_val 13.
// DataType: DT_FLOAT 1, DT_DOUBLE 2, DT_INT32 3, DT_STRING 7, DT_INT64 9,
// DT_BFLOAT16 14, DT_HALF 19.

func specShape(dims ...int64) []byte {
	var out []byte
	for _, d := range dims {
		out = append(out, pbBytes(2, pbVarint(1, uint64(d)))...)
	}
	return pbBytes(2, out)
}

func specFloatTensor(v float32) []byte { // tf.summary.scalar: packed float_val
	return cat(pbVarint(1, 1), specShape(), pbBytes(5, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))))
}

func specSessionStart(wall float64, step int64) []byte {
	return cat(specEventHeader(wall, step), pbBytes(7, cat(pbVarint(1, 1), pbBytes(3, []byte("restart")))))
}
