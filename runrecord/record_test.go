package runrecord

import (
	"slices"
	"testing"
)

func TestAppendBounded(t *testing.T) {
	t.Parallel()
	var s []uint64
	for i := range uint64(10) {
		prev := s
		s = AppendBounded(s, i, 3)
		if len(prev) > 0 && &prev[0] == &s[0] {
			t.Fatal("AppendBounded shares its result with its input")
		}
	}
	if len(s) != 3 || s[0] != 7 || s[2] != 9 {
		t.Errorf("got %v, want [7 8 9]", s)
	}
}

func TestInputs(t *testing.T) {
	rej := func(seqs ...uint64) []Rejection {
		var out []Rejection
		for _, s := range seqs {
			out = append(out, Rejection{Seq: s})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		rec  Record
		want []uint64
	}{
		{"applied alone", Record{Applied: []uint64{3, 9}}, []uint64{3, 9}},
		{"refused ones merged in order", Record{Applied: []uint64{3, 9}, Rejected: rej(12, 5)}, []uint64{3, 5, 9, 12}},
		{"a seq in both once", Record{Applied: []uint64{3, 9}, Rejected: rej(9)}, []uint64{3, 9}},
		{"applied at its bound may have lost some", Record{Applied: []uint64{1, 2, 3, 4}}, nil},
		{"refused at its bound may have lost some", Record{Applied: []uint64{1}, Rejected: rej(2, 3, 4)}, nil},
		{"nothing applied", Record{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Inputs(4, 3); !slices.Equal(got, tc.want) {
				t.Errorf("Inputs = %v, want %v", got, tc.want)
			}
		})
	}
}
