package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

// TestGeneratedFilesAreCurrent is the CI check that the SDKs' types follow
// openapi.json: a field or an operation added to either side without
// `go run ./sdk/gen` fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	require.NoError(t, run(root, true))
}

// TestCheckSeesDrift: the check fails when a generated file differs, and
// names it.
func TestCheckSeesDrift(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(root, spec))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(spec)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, spec), raw, 0o644))
	for _, o := range outputs {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(o.path)), 0o755))
	}
	require.NoError(t, run(dir, false))
	require.NoError(t, run(dir, true))

	py := filepath.Join(dir, outputs[0].path)
	require.NoError(t, os.WriteFile(py, []byte("# edited by hand\n"), 0o644))
	err = run(dir, true)
	require.ErrorContains(t, err, outputs[0].path)
	require.NotContains(t, err.Error(), outputs[1].path)
}

func TestLoad(t *testing.T) {
	a, err := load([]byte(`{
	  "paths": {"/v1/x/{id}": {"parameters": [{"name": "id", "in": "path"}, {"name": "path", "in": "query"}],
	    "post": {"operationId": "makeX", "parameters": [{"name": "force", "in": "query"}],
	      "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"ttl_s": {"type": "integer"}}}}}}}}},
	  "components": {"schemas": {
	    "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["code"],
	      "properties": {"code": {"type": "string", "enum": ["b", "a"]}}}}},
	    "Z": {"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}},
	      "list": {"type": "array", "items": {"$ref": "#/components/schemas/Error"}}}}}}}`))
	require.NoError(t, err)
	require.Equal(t, []op{{id: "makeX", method: "POST", path: "/v1/x/{id}", query: []string{"path", "force"}}}, a.ops)
	require.Equal(t, []string{"b", "a"}, a.errorCodes, "document order")
	var names []string
	for _, o := range a.types {
		names = append(names, o.name)
	}
	require.Equal(t, []string{"Error", "ErrorError", "Z", "MakeXRequest"}, names)
	require.Contains(t, string(renderPython(a)), "    tags: NotRequired[dict[str, str]]\n    list: NotRequired[list[Error]]\n")
	require.Contains(t, string(renderTypeScript(a)), "  ttl_s?: number;\n")
	require.Contains(t, string(renderTypeScript(a)), `  makeX: ["POST", "/v1/x/{id}"],`)

	for name, doc := range map[string]string{
		"not JSON":       `{`,
		"no operationId": `{"paths": {"/x": {"get": {}}}, "components": {"schemas": {}}}`,
		"no error codes": `{"paths": {}, "components": {"schemas": {}}}`,
		"a scalar type":  `{"paths": {}, "components": {"schemas": {"S": {"type": "string"}}}}`,
		"unsupported":    `{"paths": {}, "components": {"schemas": {"S": {"type": "object", "properties": {"n": {"type": "null"}}}}}}`,
	} {
		_, err := load([]byte(doc))
		require.Error(t, err, name)
	}
}
