package authoring

// distance is the Levenshtein distance between a and b, by character.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}

// Nearest returns the candidate closest to word, the first of equals,
// or "" when none is within a third of word's length (at least 1, at
// most 3 edits): a suggestion further off misleads more than it helps.
func Nearest(word string, candidates []string) string {
	limit := min(max(len([]rune(word))/3, 1), 3)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if c == word {
			continue
		}
		if d := distance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}
