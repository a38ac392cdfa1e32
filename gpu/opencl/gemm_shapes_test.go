//go:build opencl

package opencl

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu/gputest"
)

// netGemmShapes are the products of AlexNet's and MobileNet v1's training
// steps at batch 32, 224×224 (forward, backward data, filter gradient),
// with the batch tensors stored plainly (in a step some are segmented).
var netGemmShapes = []struct {
	name    string
	m, n, k int
	ta, tb  bool
}{
	{"alexnet/conv1/fwd", 64, 96800, 363, false, false},
	{"alexnet/conv2/fwd", 192, 23328, 1600, false, false},
	{"alexnet/conv3/fwd", 384, 5408, 1728, false, false},
	{"alexnet/conv4/fwd", 256, 5408, 3456, false, false},
	{"alexnet/conv5/fwd", 256, 5408, 2304, false, false},
	{"alexnet/conv2/bwd-data", 1600, 23328, 192, false, false},
	{"alexnet/conv3/bwd-data", 1728, 5408, 384, false, false},
	{"alexnet/conv4/bwd-data", 3456, 5408, 256, false, false},
	{"alexnet/conv5/bwd-data", 2304, 5408, 256, false, false},
	{"alexnet/conv1/filter", 64, 363, 96800, false, true},
	{"alexnet/conv2/filter", 192, 1600, 23328, false, true},
	{"alexnet/conv3/filter", 384, 1728, 5408, false, true},
	{"alexnet/conv4/filter", 256, 3456, 5408, false, true},
	{"alexnet/conv5/filter", 256, 2304, 5408, false, true},
	{"alexnet/fc6/fwd", 32, 4096, 9216, false, true},
	{"alexnet/fc6/bwd-data", 32, 9216, 4096, false, false},
	{"alexnet/fc6/filter", 4096, 9216, 32, true, false},
	{"mobilenet/pw2/fwd", 128, 100352, 64, false, false},
	{"mobilenet/pw2/filter", 128, 64, 100352, false, true},
	{"mobilenet/pw13/fwd", 1024, 1568, 1024, false, false},
}

// BenchmarkOpenCLGemmShapes times each of netGemmShapes with the variant
// the backend picks ("picked/<variant>") and with every built variant, in
// one run, split in k as gemmSplits says; GFLOPS.
func BenchmarkOpenCLGemmShapes(b *testing.B) {
	o := benchOpenCL(b)
	defer o.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range netGemmShapes {
		a, bb, c := o.Alloc(s.m*s.k), o.Alloc(s.k*s.n), o.Alloc(s.m*s.n)
		o.Upload(a, gputest.Rand(r, s.m*s.k))
		o.Upload(bb, gputest.Rand(r, s.k*s.n))
		as, bs, cs := o.buf(a), o.buf(bb), o.buf(c)
		lda, ldb := s.k, s.n
		if s.ta {
			lda = s.m
		}
		if s.tb {
			ldb = s.k
		}
		picked := o.gemms[o.tuner.pick(s.m, s.n, s.k)]
		for _, v := range append([]*gemmVariant{picked}, o.gemms...) {
			name := s.name + "/" + v.Name
			if v == picked && name == s.name+"/"+picked.Name {
				name = s.name + "/picked/" + v.Name
				picked = nil // only the first
			}
			b.Run(name, func(b *testing.B) {
				run := func() {
					o.gemmRun(v, s.ta, s.tb, s.m, s.n, s.k, 1, plainMat(as.m, 0, lda), plainMat(bs.m, 0, ldb), 0, plainMat(cs.m, 0, s.n), epilogue{})
				}
				run()
				must(o.Finish())
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					run()
				}
				must(o.Finish())
				b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}
