module github.com/jetflow/jetflow

go 1.26.8

require (
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/theory/jsonpath v0.12.3 // indirect
)
