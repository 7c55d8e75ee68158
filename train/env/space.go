package env

import (
	"fmt"
	"image"
)

// Geometry of the pixel world. The generator draws every scene at SourceSize;
// the agent's view is a ViewSize resampling of (a region of) it, so text that
// is legible in the source can be illegible in the full view and legible again
// after ZOOM_IN, as with a high-resolution photo shown to a vision-language model.
const (
	SourceSize = 128 // pixels per side of the hidden full-resolution frame
	ViewSize   = 64  // pixels per side of the agent's current view
	GridSize   = 8   // coarse-view cells per side
	NumCells   = GridSize * GridSize
	CellPixels = ViewSize / GridSize // view pixels per cell side
)

// Op is a visual operation the agent can call.
type Op uint8

const (
	OpSegment    Op = iota // SEGMENT_OBJECT_AT(x,y)
	OpProperties           // GET_PROPERTIES(mask of the last segment)
	OpZoom                 // ZOOM_IN(bbox of the last segment)
	OpReadText             // READ_TEXT(current view)
	OpTrack                // TRACK_OBJECT(mask of the last segment)
	OpAnswer               // ANSWER(value): ends the episode
	NumOps
)

var opNames = [NumOps]string{"SEGMENT_OBJECT_AT", "GET_PROPERTIES", "ZOOM_IN", "READ_TEXT", "TRACK_OBJECT", "ANSWER"}

func (o Op) String() string {
	if o < NumOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// ParseOp is the inverse of Op.String.
func ParseOp(s string) (Op, error) {
	for i, n := range opNames {
		if n == s {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("unknown operation %q", s)
}

// Family is a task family of the seed's task types.
type Family uint8

const (
	AttributeRecognition Family = iota
	TextExtraction
	ObjectCounting
	SpatialReasoning
	GeometricComparison
	TemporalTracking
	NumFamilies
)

var familyNames = [NumFamilies]string{"attribute_recognition", "text_extraction", "object_counting", "spatial_reasoning", "geometric_comparison", "temporal_tracking"}

func (f Family) String() string {
	if f < NumFamilies {
		return familyNames[f]
	}
	return fmt.Sprintf("Family(%d)", uint8(f))
}

// Shortcut reports whether f is a shortcut family: one whose clear tasks
// (drawn without a look-alike) the coarse view is meant to answer at a
// glance, as a vision-language model would — counting by the blobs of the
// asked hue, comparison by their areas. Every other family needs operations,
// which `pixelis data probe` and its CI test hold it to.
func (f Family) Shortcut() bool { return f == ObjectCounting || f == GeometricComparison }

// ParseFamily is the inverse of Family.String.
func ParseFamily(s string) (Family, error) {
	for i, n := range familyNames {
		if n == s {
			return Family(i), nil
		}
	}
	return 0, fmt.Errorf("unknown task family %q", s)
}

// Misuse says why an operation call was a misuse of the tool; MisuseNone for a proper call.
type Misuse uint8

const (
	MisuseNone         Misuse = iota
	MisuseNoSegment           // properties, zoom or track before any segment
	MisuseStillImage          // tracking on a single-frame image
	MisuseNothingThere        // segment on background
	MisuseOutOfRange          // coordinates outside the view
	MisuseOverCap             // more calls of this operation than the per-op cap
	MisuseIllegible           // reading text that is too small or absent in the view
	MisuseRepeat              // the same operation with the same arguments as the step before
	MisuseNoAnswer            // the episode hit its step limit without ANSWER (marked by Result.CutOff)
	MisuseBadAnswer           // an answer outside the task's vocabulary
	NumMisuses
)

var misuseNames = [NumMisuses]string{"none", "no_segment", "still_image", "nothing_there", "out_of_range", "over_cap", "illegible", "repeat", "no_answer", "bad_answer"}

func (m Misuse) String() string {
	if m < NumMisuses {
		return misuseNames[m]
	}
	return fmt.Sprintf("Misuse(%d)", uint8(m))
}

// Action is one call of an operation with its arguments.
type Action struct {
	Op     Op
	X, Y   int    // view-pixel coordinates, OpSegment only
	Answer string // OpAnswer only
}

// Result is what an operation returned, measured from pixels.
type Result struct {
	Misuse     Misuse
	Summary    string            // one line for people: "obj 3, area 64, bbox 36,8-44,16"
	ObjectID   int               // segment: component id (>0), 0 when none
	Area       int               // segment/properties: pixels of the mask (source resolution)
	BBox       image.Rectangle   // segment/properties/zoom: in source coordinates
	Colour     string            // properties
	Shape      string            // properties
	Text       string            // read: recognised label, "" when illegible
	Confidence float64           // read: recognition confidence in [0,1]
	Centre     image.Point       // properties: centre of the mask's box, source coordinates
	Track      []image.Rectangle // track: the object's box in each frame it was found
	// CutOff marks the step at which the episode hit its step limit without an
	// answer: a no_answer misuse of the episode, besides the step's own Misuse.
	CutOff bool
}

// Step is one action of a trajectory with what it returned. Obs and Index are
// filled by rollouts (the observation the action was chosen from, and its index in
// the discrete action space) so rewards and updates need not recompute them.
type Step struct {
	Action Action
	Result Result
	Index  int
	Obs    []float32
}

// Observation layout: Featurize writes GlobalFeatures floats (question, history,
// whole-image summary) followed by NumCells rows of CellFeatures floats, one row per
// coarse-view cell in row-major order. The policy's location head reads the rows.
const (
	GlobalFeatures = 135
	CellFeatures   = 14
	ObsDim         = GlobalFeatures + NumCells*CellFeatures
)

// Discrete action space layout: indices [0, NumCells) are SEGMENT_OBJECT_AT at that
// cell; then GET_PROPERTIES, ZOOM_IN, READ_TEXT, TRACK_OBJECT; then one ANSWER per
// entry of AnswerVocab.
const (
	FirstToolAction   = NumCells
	FirstAnswerAction = NumCells + 4
)

// NumActions is the size of the discrete action space.
func NumActions() int { return FirstAnswerAction + len(AnswerVocab) }
