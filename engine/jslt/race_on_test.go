//go:build race

package jslt_test

const raceEnabled = true
