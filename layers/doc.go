// Package layers holds no code. Its test states who may import whom, so
// that the rooms docs/ARCHITECTURE.md describes stay as it says.
package layers
