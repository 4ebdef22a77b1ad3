package runrecord

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestOrderAdd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		seqs []uint64
		want Order
	}{
		{"in stream order", []uint64{3, 7, 9}, Order{{3, 9}}},
		{"input before the start", []uint64{5, 2, 8, 9}, Order{{5, 5}, {2, 2}, {8, 9}}},
		{"late input cut out of its span", []uint64{1, 4, 9, 6, 12}, Order{{1, 5}, {7, 9}, {6, 6}, {12, 12}}},
		{"late at a span's start", []uint64{1, 4, 9, 2}, Order{{1, 1}, {3, 9}, {2, 2}}},
		{"late at a span's end", []uint64{1, 4, 9, 8}, Order{{1, 7}, {9, 9}, {8, 8}}},
		{"two late", []uint64{1, 9, 4, 3}, Order{{1, 2}, {5, 9}, {4, 4}, {3, 3}}},
		{"in order after late ones", []uint64{1, 9, 4, 10, 11}, Order{{1, 3}, {5, 9}, {4, 4}, {10, 11}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var rec *Record
			for _, s := range c.seqs {
				prev := rec
				var before Order
				if prev != nil {
					before = append(Order(nil), prev.Order...)
				}
				rec = rec.Next(s, 128)
				if prev != nil && !reflect.DeepEqual(prev.Order, before) {
					t.Fatalf("next changed the previous record's order: %v, was %v", prev.Order, before)
				}
			}
			if !reflect.DeepEqual(rec.Order, c.want) {
				t.Errorf("order after %v = %v, want %v", c.seqs, rec.Order, c.want)
			}
		})
	}
}

func TestOrderJSON(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(Order{{1, 5}, {7, 7}})
	if err != nil || string(data) != "[[1,5],[7,7]]" {
		t.Fatalf("marshal = %s, %v", data, err)
	}
	var o Order
	if err := json.Unmarshal(data, &o); err != nil || !reflect.DeepEqual(o, Order{{1, 5}, {7, 7}}) {
		t.Fatalf("unmarshal = %v, %v", o, err)
	}
	for _, bad := range []string{`[[5,1]]`, `[[1]]`, `[1,2]`, `[["a","b"]]`} {
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
}
