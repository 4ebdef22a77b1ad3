package jslt_test

import (
	"fmt"

	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/value"
)

// One rule applied at every depth its path selects (JSLT-FORMAT A.2);
// everything else is rebuilt around it as it was.
func ExampleStylesheet_Transform() {
	sheet, _ := value.Decode([]byte(`[{"match":"$..price","body":{"$mul":["$",2]}}]`), value.Limits{})
	s, err := jslt.Compile(sheet)
	if err != nil {
		panic(err)
	}
	in, _ := value.Decode([]byte(`{"book":[{"title":"A","price":10}],"meta":{"n":1}}`), value.Limits{})
	out, _, err := s.Transform(nil, in, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(value.Stringify(out))
	// Output: {"book":[{"price":20,"title":"A"}],"meta":{"n":1}}
}
