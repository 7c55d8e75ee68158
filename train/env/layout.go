package env

import "fmt"

// ObsVersion numbers the observation: its layout and what each feature
// measures. It changes whenever a feature is added, removed, moved or made to
// measure something else, so that a network trained on one observation is
// never fed another (checkpoint manifests record it; pixelis serve publishes
// it with the layout). Version 2: a video's cells show all its frames at
// once (the same forwards and backwards), and detail is counted by class so
// that a look-alike shows exactly the object's; version 1 had a video's first
// frame with its motion, and detail by colour steps.
const ObsVersion = 2

// FeatureGroup is a named run of floats of the observation's global block.
type FeatureGroup struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"` // index of its first float in the observation
	Size   int    `json:"size"`
}

// ObsLayout describes the observation vector Observe writes: the global
// block's feature groups in order, then Cells rows of len(CellFeatures)
// floats, one per coarse-view cell of a Grid×Grid grid in row-major order.
type ObsLayout struct {
	Version      int            `json:"version"`
	Width        int            `json:"width"` // floats in all (ObsDim)
	Global       []FeatureGroup `json:"global"`
	GlobalWidth  int            `json:"global_width"`
	Grid         int            `json:"grid"`
	Cells        int            `json:"cells"`
	CellOffset   int            `json:"cell_offset"` // index of the first cell row's first float
	CellFeatures []string       `json:"cell_features"`
}

// Names of the global block's groups, in the order Observe writes them.
const (
	GFamily         = "family"            // one-hot over families
	GAsk            = "ask"               // one-hot over what the question asks
	GColour         = "colour"            // one-hot: the first object's colour (none: all zero)
	GShape          = "shape"             // one-hot: the first object's shape
	GColour2        = "colour2"           // the second object's colour (spatial, geometric)
	GShape2         = "shape2"            // the second object's shape
	GRelation       = "relation"          // one-hot: the spatial relation asked about
	GVideo          = "video"             // 1 for a video task
	GFrames         = "frames"            // frames/8
	GLastOp         = "last_op"           // one-hot over operations, then none
	GMisused        = "misused"           // the last step was a misuse
	GSteps          = "steps"             // steps taken / MaxSteps
	GHasMask        = "has_mask"          // a segment exists
	GZoomed         = "zoomed"            // the view is zoomed
	GZoomFactor     = "zoom_factor"       // magnification/8
	GOpCalls        = "op_calls"          // calls/OpCap per tool operation
	GOpAtCap        = "op_at_cap"         // at-cap flag per tool operation
	GPropsValid     = "props_valid"       // GET_PROPERTIES has measured something
	GPropsColour    = "props_colour"      // its colour one-hot
	GPropsShape     = "props_shape"       // its shape one-hot
	GPropsArea      = "props_area_bucket" // its area bucket one-hot
	GPropsCentre    = "props_centre"      // its centre x, y (0 … 1)
	GPropsMatches   = "props_matches"     // matches asked colour, shape, second colour, second shape
	GReadDone       = "read_done"         // READ_TEXT was called
	GReadLabel      = "read_label"        // one-hot over Labels
	GReadConfidence = "read_confidence"
	GReadLegible    = "read_legible"
	GTrackValid     = "track_valid"     // TRACK_OBJECT found a direction
	GTrackDir       = "track_direction" // one-hot over Directions
	GCountMatched   = "count_matched"   // inspected objects of the asked colour, one-hot 0 … 5
	GCountInspected = "count_inspected" // objects inspected / 5
	GCountLeft      = "count_hue_left"  // asked-hue pixels not yet segmented (saturating)
	GSlot1          = "slot1"           // first asked object found, x, y, area/1000
	GSlot2          = "slot2"           // second asked object found, x, y, area/1000
	GSlotDiff       = "slot_diff"       // dx, dy, darea of the two
	GSlotCompare    = "slot_compare"    // first left of, above, larger than the second (±1)
	GViewFg         = "view_fg"         // foreground share of the whole view
	GViewHues       = "view_hues"       // share of the foreground in each hue
	GMaskBox        = "mask_box"        // the last mask's box, 0 … 1
)

// globalGroups are the global block's groups and sizes, in order: the one
// source of the block's layout, which Observe writes group by group.
var globalGroups = []struct {
	name string
	size int
}{
	{GFamily, int(NumFamilies)}, {GAsk, int(NumAsks)},
	{GColour, int(NumColours)}, {GShape, int(NumShapes)},
	{GColour2, int(NumColours)}, {GShape2, int(NumShapes)},
	{GRelation, int(NumRelations)}, {GVideo, 1}, {GFrames, 1},
	{GLastOp, int(NumOps) + 1}, {GMisused, 1}, {GSteps, 1},
	{GHasMask, 1}, {GZoomed, 1}, {GZoomFactor, 1},
	{GOpCalls, int(OpAnswer - OpSegment)}, {GOpAtCap, int(OpAnswer - OpSegment)},
	{GPropsValid, 1}, {GPropsColour, int(NumColours)}, {GPropsShape, int(NumShapes)},
	{GPropsArea, numAreaBuckets}, {GPropsCentre, 2}, {GPropsMatches, 4},
	{GReadDone, 1}, {GReadLabel, len(Labels)}, {GReadConfidence, 1}, {GReadLegible, 1},
	{GTrackValid, 1}, {GTrackDir, len(Directions)},
	{GCountMatched, 6}, {GCountInspected, 1}, {GCountLeft, 1},
	{GSlot1, 4}, {GSlot2, 4}, {GSlotDiff, 3}, {GSlotCompare, 3},
	{GViewFg, 1}, {GViewHues, NumHues}, {GMaskBox, 4},
}

// cellFeatureNames name a cell row's floats (see the cell* indices).
var cellFeatureNames = [CellFeatures]string{
	"hue_red_orange", "hue_yellow_green", "hue_cyan_blue", "hue_purple_magenta",
	"foreground", "detail", "motion", "segmented", "last_mask",
	"asked_hue", "asked_hue2", "zoomed", "column", "row",
}

// globalOffset and globalSize are each group's offset and size, by name.
var globalOffset, globalSize = func() (off, size map[string]int) {
	off, size = make(map[string]int, len(globalGroups)), make(map[string]int, len(globalGroups))
	o := 0
	for _, g := range globalGroups {
		off[g.name], size[g.name] = o, g.size
		o += g.size
	}
	return off, size
}()

// globalWidth is the global block's width by the layout; a test keeps it
// equal to GlobalFeatures.
var globalWidth = func() (n int) {
	for _, g := range globalGroups {
		n += g.size
	}
	return n
}()

// Layout is the observation's layout.
func Layout() ObsLayout {
	l := ObsLayout{
		Version: ObsVersion, Width: ObsDim, GlobalWidth: GlobalFeatures,
		Grid: GridSize, Cells: NumCells, CellOffset: GlobalFeatures,
		CellFeatures: cellFeatureNames[:],
	}
	for _, g := range globalGroups {
		l.Global = append(l.Global, FeatureGroup{Name: g.name, Offset: globalOffset[g.name], Size: g.size})
	}
	return l
}

// Group is the named group of the global block; ok is false for an unknown name.
func (l ObsLayout) Group(name string) (g FeatureGroup, ok bool) {
	for _, g := range l.Global {
		if g.Name == name {
			return g, true
		}
	}
	return FeatureGroup{}, false
}

// Cell is the index in the observation of feature f of cell k.
func (l ObsLayout) Cell(k, f int) int { return l.CellOffset + k*len(l.CellFeatures) + f }

// CheckObsVersion refuses a network made on another observation, naming both
// versions; what names the network (a checkpoint's path) prefixes the error.
func CheckObsVersion(what string, version int) error {
	if version == ObsVersion {
		return nil
	}
	return fmt.Errorf("%s was made on observation version %d, this pixelis observes version %d: its network cannot read this observation (retrain it)", what, version, ObsVersion)
}
