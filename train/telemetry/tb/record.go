// Package tb exports a run's telemetry as TensorBoard event files, so a run can be
// compared with others in TensorBoard. Writer is a telemetry.Sink; add it to the
// trainer's sinks with telemetry.Multi. The format is written by hand (TFRecord
// framing around Event protocol buffers encoded with protowire): no TensorFlow, no
// generated code. Start with Writer; record.go holds the framing, event.go the messages.
//
// It also reads event files that any TensorBoard writer is still writing (PyTorch's
// SummaryWriter, tf.summary, this Writer), for watching runs other trainers log:
// File follows one file, Reader the files of one run, FindRuns lists the runs of a log
// directory (reader.go); decode.go decodes the messages.
package tb

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is the TFRecord checksum: CRC32C rotated right by 15 bits plus a constant,
// so a CRC of data that itself contains CRCs does not degenerate.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// appendRecord frames data as one TFRecord:
//
//	uint64 length (little-endian) | uint32 masked CRC of the length | data | uint32 masked CRC of data
func appendRecord(dst, data []byte) []byte {
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC(hdr[:8]))
	dst = append(dst, hdr[:]...)
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, maskedCRC(data))
}
