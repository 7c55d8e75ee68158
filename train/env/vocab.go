package env

// AnswerVocab is the closed answer vocabulary shared by all task families.
var AnswerVocab = []string{
	// colours
	"red", "orange", "yellow", "green", "cyan", "blue", "purple", "magenta",
	// shapes
	"square", "circle", "triangle", "cross",
	// counts
	"0", "1", "2", "3", "4", "5",
	// yes / no
	"yes", "no",
	// directions
	"left", "right", "up", "down",
	// text labels
	"A7", "B3", "C5", "E2", "F8", "H4", "K7", "P9",
}
