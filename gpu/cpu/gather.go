package cpu

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

var _ gpu.RowGatherer = (*CPU)(nil)

// GatherRows implements gpu.RowGatherer.
func (c *CPU) GatherRows(dst, table, ids gpu.Buffer, dim int) {
	d, t, is := h(dst), h(table), h(ids)
	if len(d) != len(is)*dim {
		panic(fmt.Sprintf("gpu: GatherRows: %d elements for %d rows of %d", len(d), len(is), dim))
	}
	for i, v := range is {
		id := int(v)
		copy(d[i*dim:(i+1)*dim], t[id*dim:(id+1)*dim])
	}
}

// ScatterAddRows implements gpu.RowGatherer.
func (c *CPU) ScatterAddRows(table, src, ids gpu.Buffer, dim int) {
	t, s, is := h(table), h(src), h(ids)
	if len(s) != len(is)*dim {
		panic(fmt.Sprintf("gpu: ScatterAddRows: %d elements for %d rows of %d", len(s), len(is), dim))
	}
	for i, v := range is {
		row := t[int(v)*dim : (int(v)+1)*dim]
		for k, x := range s[i*dim : (i+1)*dim] {
			row[k] += x
		}
	}
}
