package compress

import "testing"

// BenchmarkCodecs encodes and decodes lenet-caffe's gradient with each
// codec, the plain float32 copy first as the floor; bytes/param is the
// payload's size.
//
//	go test ./sync/compress -run '^$' -bench . -benchtime 20x
func BenchmarkCodecs(b *testing.B) {
	src := gradLike(lenetParams, 1)
	dst := make([]float32, lenetParams)
	for _, name := range []string{"none", "fp16", "int8", "topk:0.01"} {
		c, _ := Parse(name)
		var p []byte
		b.Run("encode/"+name, func(b *testing.B) {
			b.SetBytes(4 * lenetParams)
			for b.Loop() {
				p = c.Append(p[:0], src)
			}
			b.ReportMetric(float64(len(p))/lenetParams, "bytes/param")
		})
		p = c.Append(nil, src)
		b.Run("decode/"+name, func(b *testing.B) {
			b.SetBytes(4 * lenetParams)
			for b.Loop() {
				if err := Decode(dst, p, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("feedback/topk:0.01", func(b *testing.B) {
		f := NewFeedback(NewTopK(0.01), lenetParams)
		var p []byte
		b.SetBytes(4 * lenetParams)
		for b.Loop() {
			p = f.Append(p[:0], src, 0)
		}
	})
	b.Run("feedback-adam/topk:0.01", func(b *testing.B) {
		f := NewFeedback(NewTopK(0.01), lenetParams)
		if err := f.SetAdam(0.9, 0.999, 1e-8); err != nil {
			b.Fatal(err)
		}
		var p []byte
		b.SetBytes(4 * lenetParams)
		for b.Loop() {
			p = f.Append(p[:0], src, 0)
		}
	})
	b.Run("feedback-momentum/topk:0.01", func(b *testing.B) {
		f := NewFeedback(NewTopK(0.01), lenetParams)
		if err := f.SetMomentum(0.9); err != nil {
			b.Fatal(err)
		}
		var p []byte
		b.SetBytes(4 * lenetParams)
		for b.Loop() {
			p = f.Append(p[:0], src, 0)
		}
	})
}
