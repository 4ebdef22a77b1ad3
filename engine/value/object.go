package value

// Object is a JSON object that keeps JavaScript's own-property order:
// array-index keys (canonical integers 0 … 2^32-2) ascending by number,
// then the other keys in the order they were first set. Setting a key
// again keeps its place; deleting it and setting it again moves it last.
// The query engine builds one wherever the reference's objects are made
// at run time ($map, $from-entries, a constructor read as written), so
// that walks of it ($entries, $.*, descendants, JSON text) follow the
// reference's order. A map[string]any stands for an object whose order is
// Keys order (one parsed from canonical JSON); the two are equal as JSON
// data when their members are.
//
// Names and values live in two slices, whose first inlineMembers
// entries are part of the object itself, so building a small object
// allocates once; lookups scan the names, and an index is built once the
// object has more than indexAfter members.
type Object struct {
	names []string
	vals  []any
	// ints counts the array-index keys, which lead names.
	ints  int
	index map[string]int
	// the storage of a small object's names and values
	inNames [inlineMembers]string
	inVals  [inlineMembers]any
}

const (
	indexAfter    = 16
	inlineMembers = 4
)

// NewObject returns an empty object with room for n members.
func NewObject(n int) *Object {
	o := &Object{}
	if n <= inlineMembers {
		o.names, o.vals = o.inNames[:0], o.inVals[:0]
	} else {
		o.names, o.vals = make([]string, 0, n), make([]any, 0, n)
	}
	return o
}

// Len returns the number of members.
func (o *Object) Len() int { return len(o.names) }

// Names returns the keys in order. The slice belongs to the object.
func (o *Object) Names() []string { return o.names }

// At returns the i-th member in order.
func (o *Object) At(i int) (string, any) { return o.names[i], o.vals[i] }

// Get returns the value of key k.
func (o *Object) Get(k string) (any, bool) {
	if i := o.find(k); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

func (o *Object) find(k string) int {
	if o.index != nil {
		if i, ok := o.index[k]; ok {
			return i
		}
		return -1
	}
	for i, n := range o.names {
		if n == k {
			return i
		}
	}
	return -1
}

// Set sets member k to v, in JavaScript's order.
func (o *Object) Set(k string, v any) {
	if i := o.find(k); i >= 0 {
		o.vals[i] = v
		return
	}
	at := len(o.names)
	if n, ok := arrayIndex(k); ok {
		at = o.ints
		for j := range o.ints {
			if m, _ := arrayIndex(o.names[j]); m > n {
				at = j
				break
			}
		}
		o.ints++
	}
	o.names = append(o.names, "")
	o.vals = append(o.vals, nil)
	if at < len(o.names)-1 {
		copy(o.names[at+1:], o.names[at:])
		copy(o.vals[at+1:], o.vals[at:])
		o.reindex(at)
	}
	o.names[at], o.vals[at] = k, v
	if o.index != nil {
		o.index[k] = at
	} else if len(o.names) > indexAfter {
		o.reindex(0)
	}
}

// Delete removes member k, if present.
func (o *Object) Delete(k string) {
	i := o.find(k)
	if i < 0 {
		return
	}
	if i < o.ints {
		o.ints--
	}
	o.names = append(o.names[:i], o.names[i+1:]...)
	o.vals = append(o.vals[:i], o.vals[i+1:]...)
	if o.index != nil {
		delete(o.index, k)
		o.reindex(i)
	}
}

// reindex refreshes the index from position from on, building it when
// the object has grown past indexAfter.
func (o *Object) reindex(from int) {
	if o.index == nil {
		if len(o.names) <= indexAfter {
			return
		}
		o.index, from = make(map[string]int, len(o.names)), 0
	}
	for j := from; j < len(o.names); j++ {
		o.index[o.names[j]] = j
	}
}

// Map returns the members as a map (values shared, not copied).
func (o *Object) Map() map[string]any {
	m := make(map[string]any, len(o.names))
	for i, k := range o.names {
		m[k] = o.vals[i]
	}
	return m
}

// Plain returns v with every Object in it replaced by a map, the form the
// engine stores and compares outside the query evaluator. It returns v
// itself, without allocating, when v holds no Object.
func Plain(v any) any {
	if !HasObject(v) {
		return v
	}
	return plain(v)
}

// HasObject reports whether v is or holds an Object.
func HasObject(v any) bool {
	switch t := v.(type) {
	case *Object:
		return true
	case []any:
		for _, x := range t {
			if HasObject(x) {
				return true
			}
		}
	case map[string]any:
		for _, x := range t {
			if HasObject(x) {
				return true
			}
		}
	}
	return false
}

// WalksInKeysOrder reports whether every Object v is or holds walks its
// members in Keys order: written in that order, v reads back
// (DecodeOrdered) holding no Object at all.
func WalksInKeysOrder(v any) bool {
	switch t := v.(type) {
	case *Object:
		if !InKeysOrder(t.names) {
			return false
		}
		for _, x := range t.vals {
			if !WalksInKeysOrder(x) {
				return false
			}
		}
	case []any:
		for _, x := range t {
			if !WalksInKeysOrder(x) {
				return false
			}
		}
	case map[string]any:
		for _, x := range t {
			if !WalksInKeysOrder(x) {
				return false
			}
		}
	}
	return true
}

// PlainList is Plain over each item of a list; items itself, without
// allocating, when none holds an Object.
func PlainList(items []any) []any {
	for i, x := range items {
		if HasObject(x) {
			out := append(make([]any, 0, len(items)), items[:i]...)
			for _, y := range items[i:] {
				out = append(out, Plain(y))
			}
			return out
		}
	}
	return items
}

func plain(v any) any {
	switch t := v.(type) {
	case *Object:
		m := make(map[string]any, len(t.names))
		for i, k := range t.names {
			m[k] = Plain(t.vals[i])
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = Plain(x)
		}
		return a
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = Plain(x)
		}
		return m
	}
	return v
}

// Member returns member k of object v (a map or an Object); ok is false
// when v is not an object or has no such member.
func Member(v any, k string) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		x, ok := t[k]
		return x, ok
	case *Object:
		return t.Get(k)
	}
	return nil, false
}

// Ordered returns the keys of object v in the order JavaScript walks it:
// an Object's own order, a map's Keys order. ok is false when v is not an
// object. The slice of an Object belongs to it.
func Ordered(v any) (keys []string, ok bool) {
	switch t := v.(type) {
	case map[string]any:
		return Keys(t), true
	case *Object:
		return t.names, true
	}
	return nil, false
}

// Len returns the number of members of object v, and false when v is not
// an object.
func Len(v any) (int, bool) {
	switch t := v.(type) {
	case map[string]any:
		return len(t), true
	case *Object:
		return len(t.names), true
	}
	return 0, false
}
