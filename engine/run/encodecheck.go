package run

import (
	"bytes"
	"fmt"
	"sync/atomic"
)

// checkEncoding makes Encode compare what it writes with encodeReflect.
var checkEncoding atomic.Bool

// VerifyEncoding makes every later Encode in this process compare its
// bytes with encoding/json's (the form every stored state was written in
// before Encode wrote it by hand; replay compares stored and rebuilt
// states byte for byte) and panic on a difference. Test binaries call it
// from TestMain, so that every state their tests step through is checked.
func VerifyEncoding() { checkEncoding.Store(true) }

// verifyEncoded panics unless got is encodeReflect's form of st.
func verifyEncoded(st *State, got []byte) {
	want, err := encodeReflect(st)
	if err != nil || !bytes.Equal(got, want) {
		panic(fmt.Sprintf("run.Encode wrote\n%s\nwhere encoding/json writes\n%s (%v)", got, want, err))
	}
}
