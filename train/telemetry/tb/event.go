package tb

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto.
const (
	eventWallTime    = 1 // double
	eventStep        = 2 // int64
	eventFileVersion = 3 // string
	eventSummary     = 5 // Summary
	eventSessionLog  = 7 // SessionLog (6 is the deprecated LogMessage)

	sessionStatus = 1 // SessionLog.status enum
	sessionMsg    = 3 // string
	statusStart   = 1 // SessionLog.START

	summaryValue = 1 // repeated Value

	valueTag         = 1 // string
	valueSimpleValue = 2 // float
	valueTensor      = 8 // TensorProto
	valueMetadata    = 9 // SummaryMetadata

	metadataPluginData = 1 // PluginData
	pluginName         = 1 // string

	tensorDtype     = 1 // DataType enum
	tensorShape     = 2 // TensorShapeProto
	tensorStringVal = 8 // repeated bytes

	dtString = 7 // DT_STRING
)

// fileVersion marks the first record of an event file; TensorBoard reads version 2.
const fileVersion = "brain.Event:2"

// scalar is one tagged value of a step.
type scalar struct {
	tag   string
	value float32
}

// appendEventHeader appends an Event's wall_time and step.
func appendEventHeader(b []byte, wallTime float64, step int64) []byte {
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(wallTime))
	b = protowire.AppendTag(b, eventStep, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(step))
}

// versionEvent is the Event that opens every file.
func versionEvent(wallTime float64) []byte {
	b := appendEventHeader(nil, wallTime, 0)
	b = protowire.AppendTag(b, eventFileVersion, protowire.BytesType)
	return protowire.AppendString(b, fileVersion)
}

// sessionStartEvent is a SessionLog START at step: TensorBoard's Python loader
// then discards every event at this step or later that it read before (unless it
// is the run's first START), which is what a resumed run needs after its files
// were cut back to a checkpoint.
func sessionStartEvent(wallTime float64, step int64, msg string) []byte {
	var log []byte
	log = protowire.AppendTag(log, sessionStatus, protowire.VarintType)
	log = protowire.AppendVarint(log, statusStart)
	log = protowire.AppendTag(log, sessionMsg, protowire.BytesType)
	log = protowire.AppendString(log, msg)
	b := appendEventHeader(nil, wallTime, step)
	b = protowire.AppendTag(b, eventSessionLog, protowire.BytesType)
	return protowire.AppendBytes(b, log)
}

// scalarsEvent is one Event with a Summary holding every scalar of a step.
func scalarsEvent(wallTime float64, step int64, values []scalar) []byte {
	var summary []byte
	for _, v := range values {
		var val []byte
		val = protowire.AppendTag(val, valueTag, protowire.BytesType)
		val = protowire.AppendString(val, v.tag)
		val = protowire.AppendTag(val, valueSimpleValue, protowire.Fixed32Type)
		val = protowire.AppendFixed32(val, math.Float32bits(v.value))
		summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
		summary = protowire.AppendBytes(summary, val)
	}
	return appendSummary(appendEventHeader(nil, wallTime, step), summary)
}

// textEvent is one Event with a text-plugin summary: a scalar string tensor holding
// markdown, which TensorBoard's Text tab renders.
func textEvent(wallTime float64, step int64, tag, text string) []byte {
	var plugin []byte
	plugin = protowire.AppendTag(plugin, pluginName, protowire.BytesType)
	plugin = protowire.AppendString(plugin, "text")
	var meta []byte
	meta = protowire.AppendTag(meta, metadataPluginData, protowire.BytesType)
	meta = protowire.AppendBytes(meta, plugin)

	var tensor []byte
	tensor = protowire.AppendTag(tensor, tensorDtype, protowire.VarintType)
	tensor = protowire.AppendVarint(tensor, dtString)
	tensor = protowire.AppendTag(tensor, tensorShape, protowire.BytesType)
	tensor = protowire.AppendBytes(tensor, nil) // no dimensions: a scalar
	tensor = protowire.AppendTag(tensor, tensorStringVal, protowire.BytesType)
	tensor = protowire.AppendString(tensor, text)

	var val []byte
	val = protowire.AppendTag(val, valueTag, protowire.BytesType)
	val = protowire.AppendString(val, tag)
	val = protowire.AppendTag(val, valueTensor, protowire.BytesType)
	val = protowire.AppendBytes(val, tensor)
	val = protowire.AppendTag(val, valueMetadata, protowire.BytesType)
	val = protowire.AppendBytes(val, meta)

	var summary []byte
	summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
	summary = protowire.AppendBytes(summary, val)
	return appendSummary(appendEventHeader(nil, wallTime, step), summary)
}

func appendSummary(b, summary []byte) []byte {
	b = protowire.AppendTag(b, eventSummary, protowire.BytesType)
	return protowire.AppendBytes(b, summary)
}
