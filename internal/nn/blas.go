package nn

import (
	"github.com/pixelis/pixelis/internal/blas"
	G "gorgonia.org/gorgonia"
)

// The project's BLAS (gonum's, with the blocked AVX-512/AVX2 Sgemm of
// internal/blas) is installed here, once, for gorgonia and its tensor package:
// every package that builds a graph imports nn, so every binary and test that
// trains a model multiplies its matrices with it.
func init() { G.Use(blas.Implementation{}) }
