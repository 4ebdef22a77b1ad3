package query

import "math"

// The reference runs on V8, whose Math.sin, Math.cos and Math.asin are
// fdlibm's; Go's math package uses other polynomials that differ in the
// last bit now and then. Geodesic results must agree to the last bit, so
// these are fdlibm's routines, each product rounded (float64(...)) so no
// platform fuses it into a multiply-add.

const (
	kS1 = -1.66666666666666324348e-01
	kS2 = 8.33333333332248946124e-03
	kS3 = -1.98412698298579493134e-04
	kS4 = 2.75573137070700676789e-06
	kS5 = -2.50507602534068634195e-08
	kS6 = 1.58969099521155010221e-10

	kC1 = 4.16666666666666019037e-02
	kC2 = -1.38888888888741095749e-03
	kC3 = 2.48015872894767294178e-05
	kC4 = -2.75573143513906633035e-07
	kC5 = 2.08757232129817482790e-09
	kC6 = -1.13596475577881948265e-11
)

func highWord(x float64) uint32 { return uint32(math.Float64bits(x) >> 32) }

// kernelSin is __kernel_sin on [-pi/4, pi/4]; y is the tail of x.
func kernelSin(x, y float64, iy int) float64 {
	if highWord(x)&0x7fffffff < 0x3e400000 && int(x) == 0 {
		return x
	}
	z := float64(x * x)
	v := float64(z * x)
	r := kS2 + float64(z*(kS3+float64(z*(kS4+float64(z*(kS5+float64(z*kS6)))))))
	if iy == 0 {
		return x + float64(v*(kS1+float64(z*r)))
	}
	return x - ((float64(z*(float64(0.5*y)-float64(v*r))) - y) - float64(v*kS1))
}

// kernelCos is __kernel_cos on [-pi/4, pi/4].
func kernelCos(x, y float64) float64 {
	ix := highWord(x) & 0x7fffffff
	if ix < 0x3e400000 && int(x) == 0 {
		return 1
	}
	z := float64(x * x)
	r := float64(z * (kC1 + float64(z*(kC2+float64(z*(kC3+float64(z*(kC4+float64(z*(kC5+float64(z*kC6)))))))))))
	if ix < 0x3fd33333 {
		return 1 - (float64(0.5*z) - (float64(z*r) - float64(x*y)))
	}
	var qx float64
	if ix > 0x3fe90000 {
		qx = 0.28125
	} else {
		qx = math.Float64frombits(uint64(ix-0x00200000) << 32)
	}
	hz := float64(0.5*z) - qx
	a := 1 - qx
	return a - (hz - (float64(z*r) - float64(x*y)))
}

const (
	invpio2 = 6.36619772367581382433e-01
	pio2_1  = 1.57079632673412561417e+00
	pio2_1t = 6.07710050650619224932e-11
	pio2_2  = 6.07710050630396597660e-11
	pio2_2t = 2.02226624879595063154e-21
	pio2_3  = 2.02226624871116645580e-21
	pio2_3t = 8.47842766036889956997e-32
)

// remPio2 is __ieee754_rem_pio2 for |x| up to 2^20·π/2; beyond that
// (coordinates no map holds) ok is false and the caller falls back.
func remPio2(x float64) (n int, y0, y1 float64, ok bool) {
	hx := highWord(x)
	ix := hx & 0x7fffffff
	if ix <= 0x3fe921fb {
		return 0, x, 0, true
	}
	neg := int32(hx) < 0
	if ix < 0x4002d97c { // |x| < 3pi/4
		if !neg {
			z := x - pio2_1
			if ix != 0x3ff921fb {
				y0 = z - pio2_1t
				return 1, y0, (z - y0) - pio2_1t, true
			}
			z -= pio2_2
			y0 = z - pio2_2t
			return 1, y0, (z - y0) - pio2_2t, true
		}
		z := x + pio2_1
		if ix != 0x3ff921fb {
			y0 = z + pio2_1t
			return -1, y0, (z - y0) + pio2_1t, true
		}
		z += pio2_2
		y0 = z + pio2_2t
		return -1, y0, (z - y0) + pio2_2t, true
	}
	if ix > 0x413921fb { // |x| > 2^19·π/2
		return 0, 0, 0, false
	}
	t := math.Abs(x)
	n = int(float64(t*invpio2) + 0.5)
	fn := float64(n)
	r := t - float64(fn*pio2_1)
	w := float64(fn * pio2_1t)
	j := ix >> 20
	y0 = r - w
	i := j - ((highWord(y0) >> 20) & 0x7ff)
	if i > 16 {
		t2 := r
		w = float64(fn * pio2_2)
		r = t2 - w
		w = float64(fn*pio2_2t) - ((t2 - r) - w)
		y0 = r - w
		i = j - ((highWord(y0) >> 20) & 0x7ff)
		if i > 49 {
			t2 = r
			w = float64(fn * pio2_3)
			r = t2 - w
			w = float64(fn*pio2_3t) - ((t2 - r) - w)
			y0 = r - w
		}
	}
	y1 = (r - y0) - w
	if neg {
		return -n, -y0, -y1, true
	}
	return n, y0, y1, true
}

// jsSin is V8's Math.sin.
func jsSin(x float64) float64 {
	if highWord(x)&0x7fffffff <= 0x3fe921fb {
		return kernelSin(x, 0, 0)
	}
	if math.IsInf(x, 0) || x != x {
		return math.NaN()
	}
	n, y0, y1, ok := remPio2(x)
	if !ok {
		return math.Sin(x)
	}
	switch n & 3 {
	case 0:
		return kernelSin(y0, y1, 1)
	case 1:
		return kernelCos(y0, y1)
	case 2:
		return -kernelSin(y0, y1, 1)
	}
	return -kernelCos(y0, y1)
}

// jsCos is V8's Math.cos.
func jsCos(x float64) float64 {
	if highWord(x)&0x7fffffff <= 0x3fe921fb {
		return kernelCos(x, 0)
	}
	if math.IsInf(x, 0) || x != x {
		return math.NaN()
	}
	n, y0, y1, ok := remPio2(x)
	if !ok {
		return math.Cos(x)
	}
	switch n & 3 {
	case 0:
		return kernelCos(y0, y1)
	case 1:
		return -kernelSin(y0, y1, 1)
	case 2:
		return -kernelCos(y0, y1)
	}
	return kernelSin(y0, y1, 1)
}

const (
	asPio2Hi = 1.57079632679489655800e+00
	asPio2Lo = 6.12323399573676603587e-17
	asPio4Hi = 7.85398163397448278999e-01
	pS0      = 1.66666666666666657415e-01
	pS1      = -3.25565818622400915405e-01
	pS2      = 2.01212532134862925881e-01
	pS3      = -4.00555345006794114027e-02
	pS4      = 7.91534994289814532176e-04
	pS5      = 3.47933107596021167570e-05
	qS1      = -2.40339491173441421878e+00
	qS2      = 2.02094576023350569471e+00
	qS3      = -6.88283971605453293030e-01
	qS4      = 7.70381505559019352791e-02
)

// jsAsin is V8's Math.asin (fdlibm's __ieee754_asin).
func jsAsin(x float64) float64 {
	hx := highWord(x)
	ix := hx & 0x7fffffff
	if ix >= 0x3ff00000 {
		lx := uint32(math.Float64bits(x))
		if (ix-0x3ff00000)|lx == 0 {
			return float64(x*asPio2Hi) + float64(x*asPio2Lo)
		}
		return math.NaN()
	}
	if ix < 0x3fe00000 { // |x| < 0.5
		if ix < 0x3e400000 {
			return x
		}
		t := float64(x * x)
		p := float64(t * (pS0 + float64(t*(pS1+float64(t*(pS2+float64(t*(pS3+float64(t*(pS4+float64(t*pS5)))))))))))
		q := 1 + float64(t*(qS1+float64(t*(qS2+float64(t*(qS3+float64(t*qS4)))))))
		w := p / q
		return x + float64(x*w)
	}
	w := 1 - math.Abs(x)
	t := float64(w * 0.5)
	p := float64(t * (pS0 + float64(t*(pS1+float64(t*(pS2+float64(t*(pS3+float64(t*(pS4+float64(t*pS5)))))))))))
	q := 1 + float64(t*(qS1+float64(t*(qS2+float64(t*(qS3+float64(t*qS4)))))))
	s := math.Sqrt(t)
	if ix >= 0x3fef3333 { // |x| > 0.975
		w = p / q
		t = asPio2Hi - (float64(2.0*(s+float64(s*w))) - asPio2Lo)
	} else {
		w = math.Float64frombits(math.Float64bits(s) &^ 0xffffffff)
		c := (t - float64(w*w)) / (s + w)
		r := p / q
		p = float64(2.0*s*r) - (asPio2Lo - float64(2.0*c))
		q = asPio4Hi - float64(2.0*w)
		t = asPio4Hi - (p - q)
	}
	if int32(hx) > 0 {
		return t
	}
	return -t
}
