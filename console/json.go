package console

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runrecord"
)

// writeJSON answers with v. encoding/json escapes <, > and & inside
// strings, so a response can never be read as markup.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is every error the API returns.
type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

// statusOf maps a store error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, kvstore.ErrRunNotFound), errors.Is(err, registry.ErrWorkflowNotFound), errors.Is(err, registry.ErrDocumentNotFound):
		return http.StatusNotFound
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, runrecord.ErrRemoved):
		// Its tombstone's message says when retention removed it.
		return http.StatusGone
	}
	return http.StatusBadGateway
}

var errBadRequest = errors.New("bad request")
