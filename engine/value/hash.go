package value

import (
	"sort"
	"strconv"
	"unicode/utf16"
)

// HashContent is the reference's content hash: 32-bit FNV-1a over the
// UTF-16 code units of s, written in base 36.
func HashContent(s string) string {
	h := uint32(0x811c9dc5)
	for _, r := range s {
		if r < 0x10000 {
			h ^= uint32(r)
			h *= 0x01000193
			continue
		}
		hi, lo := utf16.EncodeRune(r)
		h ^= uint32(hi)
		h *= 0x01000193
		h ^= uint32(lo)
		h *= 0x01000193
	}
	return strconv.FormatUint(uint64(h), 36)
}

func sortSlice(keys []string) {
	sort.Slice(keys, func(i, j int) bool { return CompareUTF16(keys[i], keys[j]) < 0 })
}
