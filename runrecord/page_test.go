package runrecord

import (
	"slices"
	"testing"
)

func TestPageDueEachSizeMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prev, next int64
		size       int
		want       bool
	}{
		{0, 1, 128, false},
		{126, 127, 128, false},
		{127, 128, 128, true},
		{128, 129, 128, false},
		{255, 256, 128, true},
		{120, 130, 128, true}, // a resume that applied held inputs
		{127, 128, 0, false},
		{128, 128, 128, false},
		{129, 128, 128, false},
	} {
		if got := PageDue(c.prev, c.next, c.size); got != c.want {
			t.Errorf("PageDue(%d, %d, %d) = %v, want %v", c.prev, c.next, c.size, got, c.want)
		}
	}
}

func TestPageRoundTrip(t *testing.T) {
	t.Parallel()
	r := &Record{Applied: []uint64{3, 7, 9, 12}, Rejected: []Rejection{{Seq: 8}}, Ignored: []Rejection{{Seq: 9}}}
	if p := r.Page(3); !slices.Equal(p, []uint64{7, 9, 12}) {
		t.Errorf("Page(3) = %v", p)
	}
	if p := r.Page(128); !slices.Equal(p, r.Applied) {
		t.Errorf("Page(128) = %v", p)
	}
	final := r.FinalPage()
	if !slices.Equal(final, []uint64{3, 7, 8, 9, 12}) {
		t.Errorf("FinalPage() = %v", final)
	}
	for _, data := range []string{string(EncodePage(final)), "[3, 7,8 ,9,12]", " [3,7,8,9,12] "} {
		if got, err := DecodePage([]byte(data)); err != nil || !slices.Equal(got, final) {
			t.Errorf("DecodePage(%s) = %v, %v", data, got, err)
		}
	}
	for _, bad := range []string{"", "[", "[1,", "{}", `["1"]`, "[-1]"} {
		if got, err := DecodePage([]byte(bad)); err == nil {
			t.Errorf("DecodePage(%q) = %v, want an error", bad, got)
		}
	}
}
