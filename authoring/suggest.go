package authoring

// distance is the optimal string alignment distance between a and b, by
// character: Levenshtein's insertions, deletions and substitutions, and a
// swap of two neighbours as one edit, the commonest slip of a typist
// ("idel" for "idle").
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	rows := make([][]int, len(x)+1)
	for i := range rows {
		rows[i] = make([]int, len(y)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(x)][len(y)]
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
