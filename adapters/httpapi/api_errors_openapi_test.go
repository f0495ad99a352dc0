package httpapi

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErrorCodesInOpenAPI: every code the API answers with is one of the
// Error schema's stable codes in openapi.json, which the SDKs turn into
// their exception classes (sdk/gen): a code added here without the
// description would reach their users as an unknown error.
func TestErrorCodesInOpenAPI(t *testing.T) {
	raw, err := os.ReadFile("../../cmd/executor/openapi.json")
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Error struct {
							Properties struct {
								Code struct {
									Enum []string `json:"enum"`
								} `json:"code"`
							} `json:"properties"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	described := doc.Components.Schemas.Error.Properties.Error.Properties.Code.Enum
	codes := []string{CodeInternal, CodeMethodNotAllowed}
	for _, e := range apiErrors {
		codes = append(codes, e.code)
	}
	for _, c := range codes {
		require.Contains(t, described, c, "openapi.json's Error.error.code enum lacks %q", c)
	}
}
