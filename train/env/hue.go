package env

import "math"

// The coarse view's colour sense. A view pixel is seen by its hue angle, which
// mixing with any grey (the background, the box filter's blends at object
// edges) or white (label ink) leaves unchanged, and the angle is read to the
// nearest hue pair only: the two palette colours of a pair look alike. Whether
// a pixel is foreground is judged by how far it is from the background relative
// to how far its pair's colour is, so a blend of 40 % red and one of 40 %
// orange are both foreground or both not. Nothing in the coarse view can then
// tell a colour from its look-alike.

// hueAngles are the palette colours' HSV hue angles in degrees.
var hueAngles = func() (a [NumColours]float64) {
	for c, p := range Palette {
		a[c] = hueAngle(float64(p[0]), float64(p[1]), float64(p[2]))
	}
	return a
}()

// hueAngle is the HSV hue of (r, g, b) in [0, 360); grey is 0.
func hueAngle(r, g, b float64) float64 {
	hi, lo := max(r, g, b), min(r, g, b)
	d := hi - lo
	if d == 0 {
		return 0
	}
	var h float64
	switch hi {
	case r:
		h = (g - b) / d
	case g:
		h = 2 + (b-r)/d
	default:
		h = 4 + (r-g)/d
	}
	return math.Mod(60*h+360, 360)
}

// angleDist is the distance between two angles on the circle, degrees.
func angleDist(a, b float64) float64 {
	d := math.Abs(a - b)
	return min(d, 360-d)
}

// nearestHueColour is the palette colour whose hue angle is nearest the
// pixel's: the coarse view keeps only its Hue.
func nearestHueColour(r, g, b int) Colour {
	h := hueAngle(float64(r), float64(g), float64(b))
	best, bestD := Colour(0), 361.0
	for c, a := range hueAngles {
		if d := angleDist(h, a); d < bestD {
			best, bestD = Colour(c), d
		}
	}
	return best
}

// fgStrength is the share, in [0, 1+], of the way from the background to the
// pair colour c that a pixel lies: about α for a blend of α of the colour.
func fgStrength(p [3]int, bg [3]int, c Colour) float64 {
	var dp, dc float64
	for i := range 3 {
		x := float64(p[i] - bg[i])
		y := float64(int(Palette[c][i]) - bg[i])
		dp += x * x
		dc += y * y
	}
	return math.Sqrt(dp / max(dc, 1))
}
