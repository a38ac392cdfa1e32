package data

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// noLabeler hides Images' Label method, to test the decode fallback.
type noLabeler struct{ m *Images }

func (n noLabeler) Len() int                       { return n.m.Len() }
func (n noLabeler) Shape() (c, h, w int)           { return n.m.Shape() }
func (n noLabeler) Classes() int                   { return n.m.Classes() }
func (n noLabeler) Get(i int, dst []float32) int32 { return n.m.Get(i, dst) }

// indicesOf returns the base sample index and label of every sample of ds,
// read through Get.
func indicesOf(ds Dataset) (idx []int, labels []int32) {
	c, h, w := ds.Shape()
	dst := make([]float32, c*h*w)
	for i := range ds.Len() {
		labels = append(labels, ds.Get(i, dst))
		idx = append(idx, sampleIndex(dst))
	}
	return idx, labels
}

func TestSubset(t *testing.T) {
	m := seqImages(t, 10, 1, 2, 2, 3)
	idx := []int{9, 0, 4, 4}
	s := Subset(m, idx)
	idx[0] = 1 // Subset copied its argument
	got, labels := indicesOf(s)
	if !slices.Equal(got, []int{9, 0, 4, 4}) || !slices.Equal(labels, []int32{0, 0, 1, 1}) {
		t.Errorf("samples %v labels %v", got, labels)
	}
	if s.Classes() != 3 || s.Len() != 4 {
		t.Errorf("Classes %d Len %d", s.Classes(), s.Len())
	}
	if l := s.(Labeler).Label(2); l != 1 {
		t.Errorf("Label(2) = %d, want 1", l)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "index 10 out of range") {
				t.Errorf("recover() = %v, want an out-of-range panic", r)
			}
		}()
		Subset(m, []int{10})
	}()
}

func TestFilterClasses(t *testing.T) {
	m := seqImages(t, 30, 1, 2, 2, 10) // label i%10
	tests := []struct {
		name        string
		ds          Dataset
		classes     []int
		relabel     bool
		wantIdx     []int
		wantLabels  []int32
		wantClasses int
	}{
		{"digits 5-9 relabelled", m, []int{5, 6, 7, 8, 9}, true,
			[]int{5, 6, 7, 8, 9, 15, 16, 17, 18, 19, 25, 26, 27, 28, 29},
			[]int32{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4}, 5},
		{"keep labels", m, []int{7, 2}, false,
			[]int{2, 7, 12, 17, 22, 27}, []int32{2, 7, 2, 7, 2, 7}, 10},
		{"relabel follows the given order", m, []int{7, 2}, true,
			[]int{2, 7, 12, 17, 22, 27}, []int32{1, 0, 1, 0, 1, 0}, 2},
		{"without Labeler", noLabeler{m}, []int{3}, true, []int{3, 13, 23}, []int32{0, 0, 0}, 1},
		{"of a view", Subset(m, []int{29, 19, 9, 0}), []int{9}, true, []int{29, 19, 9}, []int32{0, 0, 0}, 1},
		{"nothing", m, nil, true, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := FilterClasses(tt.ds, tt.classes, tt.relabel)
			idx, labels := indicesOf(f)
			if !slices.Equal(idx, tt.wantIdx) || !slices.Equal(labels, tt.wantLabels) {
				t.Errorf("samples %v labels %v, want %v %v", idx, labels, tt.wantIdx, tt.wantLabels)
			}
			if f.Classes() != tt.wantClasses {
				t.Errorf("Classes = %d, want %d", f.Classes(), tt.wantClasses)
			}
			for i, want := range tt.wantLabels {
				if got := f.(Labeler).Label(i); got != want {
					t.Errorf("Label(%d) = %d, want %d", i, got, want)
				}
			}
		})
	}
	for _, bad := range [][]int{{10}, {-1}, {3, 3}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("FilterClasses(%v) did not panic", bad)
				}
			}()
			FilterClasses(m, bad, true)
		}()
	}
}

func TestShardDisjointAndCovering(t *testing.T) {
	for _, size := range []int{1, 7, 10, 60} {
		m := seqImages(t, size, 1, 2, 2, 4)
		for n := 1; n <= min(size, 7); n++ {
			seen := make([]int, size)
			lens := []int{}
			for i := range n {
				s, err := Shard(m, i, n)
				if err != nil {
					t.Fatalf("Shard(%d/%d of %d): %v", i, n, size, err)
				}
				idx, labels := indicesOf(s)
				for k, j := range idx {
					seen[j]++
					if j%n != i {
						t.Errorf("shard %d/%d holds sample %d, not interleaved", i, n, j)
					}
					if labels[k] != int32(j%4) {
						t.Errorf("shard %d/%d sample %d label %d", i, n, j, labels[k])
					}
				}
				lens = append(lens, s.Len())
			}
			for j, c := range seen {
				if c != 1 {
					t.Errorf("size %d, n %d: sample %d in %d shards, want exactly 1", size, n, j, c)
				}
			}
			if slices.Max(lens)-slices.Min(lens) > 1 {
				t.Errorf("size %d, n %d: shard sizes %v differ by more than 1", size, n, lens)
			}
		}
	}
}

func TestShardErrors(t *testing.T) {
	m := seqImages(t, 3, 1, 1, 2, 2)
	tests := []struct {
		i, n int
		want string
	}{
		{0, 0, "want 0 <= i < n"},
		{3, 3, "want 0 <= i < n"},
		{-1, 2, "want 0 <= i < n"},
		{0, 4, "3 samples cannot fill 4 shards"},
	}
	for _, tt := range tests {
		_, err := Shard(m, tt.i, tt.n)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Shard(%d, %d): err = %v, want %q", tt.i, tt.n, err, tt.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		i, n int
		want string // error substring; "" for success
	}{
		{"0/1", 0, 1, ""},
		{"2/3", 2, 3, ""},
		{" 1 / 4 ", 1, 4, ""},
		{"3/3", 0, 0, "i = 3, want 0..2 (shards are numbered from 0)"},
		{"-1/3", 0, 0, "i = -1"},
		{"0/0", 0, 0, "n = 0, want at least 1"},
		{"1-3", 0, 0, "want i/n"},
		{"a/3", 0, 0, "want two integers"},
		{"1/", 0, 0, "want two integers"},
		{"", 0, 0, "want i/n"},
	}
	for _, tt := range tests {
		i, n, err := ParseShard(tt.in)
		if tt.want == "" {
			if err != nil || i != tt.i || n != tt.n {
				t.Errorf("ParseShard(%q) = %d, %d, %v; want %d, %d", tt.in, i, n, err, tt.i, tt.n)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseShard(%q): err = %v, want %q", tt.in, err, tt.want)
		}
	}
}
