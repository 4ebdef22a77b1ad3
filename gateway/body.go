package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// readBody reads a request body up to the gateway's limit.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Error) {
	limit := g.maxBody()
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: fmt.Sprintf("the body is larger than %d bytes, the server's max payload", limit), Pointer: "/"}
	case err != nil:
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: "reading the body: " + err.Error(), Pointer: "/"}
	}
	return data, nil
}

// decodeObject decodes a JSON object body into v, refusing members v does
// not have; an empty body is an empty object. Errors name the member.
func (g *Gateway) decodeObject(w http.ResponseWriter, r *http.Request, v any) *Error {
	data, e := g.readBody(w, r)
	if e != nil {
		return e
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, err := dec.Token(); err != io.EOF {
			return invalid("/", "the body holds more than one JSON value")
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return invalid("/"+strings.ReplaceAll(typeErr.Field, ".", "/"), fmt.Sprintf("must be %s, not JSON %s", kindOf(typeErr.Type.Kind().String()), typeErr.Value))
	case errors.As(err, &typeErr):
		return invalid("/", "the body must be a JSON object, not "+typeErr.Value)
	case errors.As(err, &syntaxErr):
		return invalid("/", fmt.Sprintf("not JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no type for this error; its text is stable.
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return invalid("/"+name, fmt.Sprintf("unknown member %q", name))
	}
	return invalid("/", "not a JSON object: "+err.Error())
}

func kindOf(k string) string {
	switch k {
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	case "slice":
		return "an array"
	case "bool":
		return "true or false"
	}
	return "a number"
}

func invalid(pointer, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: msg, Pointer: pointer}
}
