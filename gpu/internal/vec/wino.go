package vec

import "fmt"

// The Winograd F(2×2, 3×3) transforms' inner loops (gpu/cpu/winograd.go).
// Both transforms are additions and subtractions only, each rounded on its
// own in the order written below, so the vector loops give the Go twins'
// bits. The CPU backend runs every pass of both transforms through these
// two: the input transform's row and column passes are both WinoIn (the
// column pass over a row deinterleaved into even and odd columns, so that
// the four taps of tile t are e[t], o[t], e[t+1], o[t+1]), the output
// transform's both WinoOut.

// WinoIn computes Bᵀ·d over n = len(a[0]) columns of four rows:
//
//	a0 = d0 - d2,  a1 = d1 + d2,  a2 = d2 - d1,  a3 = d1 - d3.
//
// Every slice must hold n floats; a may not overlap d.
func WinoIn(a, d [4][]float32) {
	n := len(a[0])
	for i := range 4 {
		if len(a[i]) < n || len(d[i]) < n {
			panic(fmt.Sprintf("vec: WinoIn: rows of %d, %d, %d, %d and %d, %d, %d, %d for %d columns",
				len(a[0]), len(a[1]), len(a[2]), len(a[3]), len(d[0]), len(d[1]), len(d[2]), len(d[3]), n))
		}
	}
	if n == 0 {
		return
	}
	if n8 := n &^ 7; useAVX2 && n8 > 0 {
		winoInAVX2(&a[0][0], &a[1][0], &a[2][0], &a[3][0], &d[0][0], &d[1][0], &d[2][0], &d[3][0], n8)
		for i := range 4 {
			a[i], d[i] = a[i][n8:], d[i][n8:]
		}
	}
	if n4 := n &^ 3; useNEON && n4 > 0 {
		winoInNEON(&a[0][0], &a[1][0], &a[2][0], &a[3][0], &d[0][0], &d[1][0], &d[2][0], &d[3][0], n4)
		for i := range 4 {
			a[i], d[i] = a[i][n4:], d[i][n4:]
		}
	}
	winoInGo(a, d)
}

// WinoOut computes Aᵀ·m over n = len(s0) columns of four rows:
//
//	s0 = (m0 + m1) + m2,  s1 = (m1 - m2) - m3.
//
// Every slice must hold n floats; s0 and s1 may not overlap m.
func WinoOut(s0, s1 []float32, m [4][]float32) {
	n := len(s0)
	if len(s1) < n || len(m[0]) < n || len(m[1]) < n || len(m[2]) < n || len(m[3]) < n {
		panic(fmt.Sprintf("vec: WinoOut: rows of %d, %d and %d, %d, %d, %d for %d columns",
			len(s0), len(s1), len(m[0]), len(m[1]), len(m[2]), len(m[3]), n))
	}
	if n == 0 {
		return
	}
	if n8 := n &^ 7; useAVX2 && n8 > 0 {
		winoOutAVX2(&s0[0], &s1[0], &m[0][0], &m[1][0], &m[2][0], &m[3][0], n8)
		s0, s1 = s0[n8:], s1[n8:]
		for i := range 4 {
			m[i] = m[i][n8:]
		}
	}
	if n4 := n &^ 3; useNEON && n4 > 0 {
		winoOutNEON(&s0[0], &s1[0], &m[0][0], &m[1][0], &m[2][0], &m[3][0], n4)
		s0, s1 = s0[n4:], s1[n4:]
		for i := range 4 {
			m[i] = m[i][n4:]
		}
	}
	winoOutGo(s0, s1, m)
}

// WinoDy computes A·(p; q) over n = len(p) columns of two rows, the output
// gradient's transform in the Winograd filter gradient:
//
//	o0 = p,  o1 = p + q,  o2 = p - q,  o3 = -q  (a sign flip: -(+0) is -0).
//
// Every slice must hold n floats; o may not overlap p or q.
func WinoDy(o [4][]float32, p, q []float32) {
	n := len(p)
	if len(q) < n || len(o[0]) < n || len(o[1]) < n || len(o[2]) < n || len(o[3]) < n {
		panic(fmt.Sprintf("vec: WinoDy: rows of %d, %d, %d, %d and %d, %d for %d columns",
			len(o[0]), len(o[1]), len(o[2]), len(o[3]), len(p), len(q), n))
	}
	if n == 0 {
		return
	}
	if n8 := n &^ 7; useAVX2 && n8 > 0 {
		winoDyAVX2(&o[0][0], &o[1][0], &o[2][0], &o[3][0], &p[0], &q[0], n8)
		p, q = p[n8:], q[n8:]
		for i := range 4 {
			o[i] = o[i][n8:]
		}
	}
	if n4 := n &^ 3; useNEON && n4 > 0 {
		winoDyNEON(&o[0][0], &o[1][0], &o[2][0], &o[3][0], &p[0], &q[0], n4)
		p, q = p[n4:], q[n4:]
		for i := range 4 {
			o[i] = o[i][n4:]
		}
	}
	winoDyGo(o, p, q)
}

// The Go twins: what the assembly must compute.

func winoDyGo(o [4][]float32, p, q []float32) {
	n := len(p)
	o0, o1, o2, o3, q := o[0][:n], o[1][:n], o[2][:n], o[3][:n], q[:n]
	for j, a := range p {
		b := q[j]
		o0[j], o1[j], o2[j], o3[j] = a, a+b, a-b, -b
	}
}

func winoInGo(a, d [4][]float32) {
	n := len(a[0])
	a0, a1, a2, a3 := a[0], a[1][:n], a[2][:n], a[3][:n]
	d0, d1, d2, d3 := d[0][:n], d[1][:n], d[2][:n], d[3][:n]
	for j := range a0 {
		x0, x1, x2, x3 := d0[j], d1[j], d2[j], d3[j]
		a0[j], a1[j], a2[j], a3[j] = x0-x2, x1+x2, x2-x1, x1-x3
	}
}

func winoOutGo(s0, s1 []float32, m [4][]float32) {
	s1 = s1[:len(s0)]
	m0, m1, m2, m3 := m[0][:len(s0)], m[1][:len(s0)], m[2][:len(s0)], m[3][:len(s0)]
	for j := range s0 {
		v1, v2 := m1[j], m2[j]
		s0[j], s1[j] = m0[j]+v1+v2, v1-v2-m3[j]
	}
}
