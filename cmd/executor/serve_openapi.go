package main

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3 description of every route the server serves;
// serve_test.go checks that the two agree.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI) // a client gone mid-answer is not our error
}
