package serve

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/pixelis/pixelis/train/env"
)

// Image sizes a client may ask for.
const (
	minImageSize = 8
	maxImageSize = 1024
)

// render resamples region reg of a source frame to an opaque size×size
// image (see resample).
func render(src *image.RGBA, reg image.Rectangle, size int) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, size, size))
	resample(dst.Pix, 4, src, reg, size)
	return dst
}

// resample writes region reg of a source frame, resampled to size×size with
// a box filter, into dst as rows of pixels of channels bytes (3: RGB, 4:
// RGBA with alpha 255). Each output pixel is the mean of the source pixels
// of its cell (at least one), which is the env's own view resampling when
// size is env.ViewSize, and nearest-neighbour enlargement when size exceeds
// the region.
func resample(dst []uint8, channels int, src *image.RGBA, reg image.Rectangle, size int) {
	w, h := reg.Dx(), reg.Dy()
	pix, stride := src.Pix, src.Stride
	var xsBuf [maxImageSize + 1]int
	xs := xsBuf[:size+1]
	for i := range xs {
		xs[i] = (reg.Min.X - src.Rect.Min.X + i*w/size) * 4 // byte offset of the cell's first column
	}
	if w <= size && h <= size { // enlargement: every cell is one source pixel
		d := 0
		for dy := 0; dy < size; dy++ {
			o := (reg.Min.Y - src.Rect.Min.Y + dy*h/size) * stride
			for dx := 0; dx < size; dx++ {
				p := pix[o+xs[dx] : o+xs[dx]+3 : o+xs[dx]+3]
				dst[d], dst[d+1], dst[d+2] = p[0], p[1], p[2]
				if channels == 4 {
					dst[d+3] = 255
				}
				d += channels
			}
		}
		return
	}
	d := 0
	for dy := 0; dy < size; dy++ {
		y0 := reg.Min.Y - src.Rect.Min.Y + dy*h/size
		y1 := max(reg.Min.Y-src.Rect.Min.Y+(dy+1)*h/size, y0+1)
		rows := y1 - y0
		for dx := 0; dx < size; dx++ {
			x0, x1 := xs[dx], max(xs[dx+1], xs[dx]+4)
			var s0, s1, s2 uint32
			for o := y0*stride + x0; o < y1*stride; o += stride {
				row := pix[o : o+x1-x0 : o+x1-x0]
				for k := 0; k+2 < len(row); k += 4 {
					s0 += uint32(row[k])
					s1 += uint32(row[k+1])
					s2 += uint32(row[k+2])
				}
			}
			switch n := uint32(rows * (x1 - x0) / 4); n { // divisions dominate: spare the common ones
			case 1:
			case 4:
				s0, s1, s2 = s0>>2, s1>>2, s2>>2
			default:
				s0, s1, s2 = s0/n, s1/n, s2/n
			}
			dst[d], dst[d+1], dst[d+2] = uint8(s0), uint8(s1), uint8(s2)
			if channels == 4 {
				dst[d+3] = 255
			}
			d += channels
		}
	}
}

var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngPool{}}

type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}
func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

func writePNG(w http.ResponseWriter, img image.Image, headers map[string]string) {
	var buf bytes.Buffer
	if err := pngEncoder.Encode(&buf, img); err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "encode png: " + err.Error()})
		return
	}
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// intParam reads an optional integer query parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int) (int, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badField(name, "must be an integer, got %q", v)
	}
	if n < lo || n > hi {
		return 0, badField(name, "must be in [%d, %d], got %d", lo, hi, n)
	}
	return n, nil
}

// maxFrame bounds a frame number before the task is looked at.
const maxFrame = 1 << 20

// hasFrame is the one answer, for ?frame=k and /frames/k alike, to a frame
// number the task lacks: 404 naming the parameter, since the number is
// well formed but no such frame exists.
func hasFrame(t *env.Task, field string, k int) *apiError {
	if n := len(t.Frames); k < 0 || k >= n {
		return errorf(http.StatusNotFound, field, "task %s has %d frame(s): %s must be in [0, %d), got %d", t.ID, n, field, n, k)
	}
	return nil
}

// handleView sends the current view: the episode's view region of frame 0
// (or ?frame=k) resampled to env.ViewSize pixels (or ?size=N), which is what
// SEGMENT_OBJECT_AT's x and y and READ_TEXT refer to.
func (s *Server) handleView(w http.ResponseWriter, r *http.Request) {
	size, err := intParam(r, "size", env.ViewSize, minImageSize, maxImageSize)
	if err != nil {
		writeError(w, err)
		return
	}
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	frame, err := intParam(r, "frame", 0, -maxFrame, maxFrame)
	if err == nil {
		err = hasFrame(e.task, "frame", frame)
	}
	if err != nil {
		e.mu.Unlock()
		writeError(w, err)
		return
	}
	src, reg := e.task.Frames[frame], e.region
	e.mu.Unlock() // frames are never written after Generate: encode without the lock
	writePNG(w, render(src, reg, size), map[string]string{
		"X-Pixelis-Region": fmt.Sprintf("%d,%d,%d,%d", reg.Min.X, reg.Min.Y, reg.Max.X, reg.Max.Y),
		"X-Pixelis-Frame":  strconv.Itoa(frame),
	})
}

// handleFrame sends source frame k of the task ("0.png" or "0"), whole, at
// env.SourceSize pixels (or ?size=N).
func (s *Server) handleFrame(w http.ResponseWriter, r *http.Request) {
	ks := strings.TrimSuffix(r.PathValue("k"), ".png")
	k, perr := strconv.Atoi(ks)
	if perr != nil {
		writeError(w, badField("k", "frame number must be an integer, got %q", r.PathValue("k")))
		return
	}
	size, err := intParam(r, "size", env.SourceSize, minImageSize, maxImageSize)
	if err != nil {
		writeError(w, err)
		return
	}
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if err := hasFrame(e.task, "k", k); err != nil {
		e.mu.Unlock()
		writeError(w, err)
		return
	}
	src := e.task.Frames[k]
	e.mu.Unlock()
	var img image.Image = src
	if size != env.SourceSize {
		img = render(src, fullView, size)
	}
	writePNG(w, img, map[string]string{"X-Pixelis-Frame": strconv.Itoa(k)})
}
