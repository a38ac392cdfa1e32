package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// TestPoolDilationDescription: a dilated pool's dilations go into the
// graph description and come back (dh, dw); an undilated pool's
// description has none, so it reads and writes as before pools had them,
// and a description without them (every file written before) is read as
// dilation 1; a negative one is refused.
func TestPoolDilationDescription(t *testing.T) {
	nodes := []solver.Node{
		{Layer: solver.NewMaxPool2D("mp", solver.PoolConfig{KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, DilH: 2, DilW: 3, CeilMode: true})},
		{Layer: solver.NewAvgPool2D("ap", solver.PoolConfig{KH: 2, DilH: 2, DilW: 2, CountIncludePad: true})},
		{Layer: solver.NewMaxPool2D("plain", solver.PoolConfig{KH: 1})},
	}
	layers, err := Describe(nodes)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"mp","kh":3,"kw":2,"sh":1,"sw":2,"ph":1,"dh":2,"dw":3`, `"name":"ap","kh":2,"kw":2,"sh":2,"sw":2,"dh":2,"dw":2`,
		`{"kind":"maxpool2d","name":"plain","kh":1,"kw":1,"sh":1,"sw":1}`} {
		if !strings.Contains(raw, want) {
			t.Errorf("description %s lacks %s", raw, want)
		}
	}
	back, err := DecodeGraph(raw)
	if err != nil {
		t.Fatal(err)
	}
	again, err := GraphNodes(back)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []solver.PoolConfig{{KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, DilH: 2, DilW: 3, CeilMode: true},
		{KH: 2, KW: 2, StrideH: 2, StrideW: 2, DilH: 2, DilW: 2, CountIncludePad: true}, {KH: 1, KW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1}} {
		if got := again[i].Layer.(*solver.Pool2D).Cfg; got != want {
			t.Errorf("layer %d read back as %+v, want %+v", i, got, want)
		}
	}
	net, err := solver.NewNet(cpu.NewCPU(), solver.Shape{C: 2, H: 11, W: 13}, again)
	if err != nil {
		t.Fatal(err)
	}
	// 11: (11+2-5+1-1)/1+1 = 9 (ceil: (8+0)/1+1); 13: ceil((13-4)/2)+1 = 6;
	// then the 2×2 window dilated by 2 at stride 2: 4×2; then 1×1.
	if want := (solver.Shape{C: 2, H: 4, W: 2}); net.Out != want {
		t.Errorf("output %v, want %v", net.Out, want)
	}

	old, err := GraphNodes([]Layer{{Kind: "avgpool2d", Name: "old", KH: 2, KW: 2, SH: 2, SW: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if c := old[0].Layer.(*solver.Pool2D).Cfg; c.DilH != 1 || c.DilW != 1 {
		t.Errorf("a description without dilations read as %dx%d, want 1x1", c.DilH, c.DilW)
	}
	if _, err := GraphNodes([]Layer{{Kind: "maxpool2d", Name: "neg", KH: 2, KW: 2, SH: 2, SW: 2, DH: -1}}); !errors.Is(err, ErrGraph) {
		t.Errorf("dilation -1: %v, want ErrGraph", err)
	}
}

// TestConvTransposeDilationDescription: a dilated transposed convolution's
// dilations round-trip through the description; an undilated one's has
// none (as before it could be dilated).
func TestConvTransposeDilationDescription(t *testing.T) {
	d := solver.NewConvTranspose2D("t", solver.ConvConfig{Out: 2, KH: 3, StrideH: 2, StrideW: 2}, 1, 0)
	d.DH, d.DW = 2, 3
	plain := solver.NewConvTranspose2D("u", solver.ConvConfig{Out: 2, KH: 2}, 0, 0)
	layers, err := Describe([]solver.Node{{Layer: d}, {Layer: plain}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw, `"dh":2,"dw":3`) || strings.Count(raw, `"dh"`) != 1 {
		t.Errorf("description %s: want dh/dw on t only", raw)
	}
	back, err := DecodeGraph(raw)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := GraphNodes(back)
	if err != nil {
		t.Fatal(err)
	}
	if l := nodes[0].Layer.(*solver.ConvTranspose2D); l.DH != 2 || l.DW != 3 || l.OutPadH != 1 {
		t.Errorf("read back with dilations %dx%d, output padding %d", l.DH, l.DW, l.OutPadH)
	}
	net, err := solver.NewNet(cpu.NewCPU(), solver.Shape{C: 3, H: 4, W: 4}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	// t: (4-1)·2 + (3-1)·2+1 + 1 = 12 high, (4-1)·2 + (3-1)·3+1 = 13 wide;
	// u: 13 and 14.
	if want := (solver.Shape{C: 2, H: 13, W: 14}); net.Out != want {
		t.Errorf("output %v, want %v", net.Out, want)
	}
}
