package main

import (
	"os"
	"path/filepath"
	"regexp"
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

// internalOps are the operations an SDK leaves out, with the reason:
// the gate's own routes, probes and metrics are for the platform, and the
// preview routes are for browsers (the SDKs offer signPortURL instead).
var internalOps = map[string]string{
	"gateConfig": "gate", "gateReport": "gate", "healthz": "probe", "readyz": "probe", "metrics": "Prometheus",
	"openapi": "the description itself", "previewPortRoot": "browser", "previewPortGet": "browser",
	"previewPortPost": "browser", "previewPortPut": "browser", "previewPortPatch": "browser", "previewPortDelete": "browser",
}

// sdkSources are each SDK's hand-written sources: every call names its
// operation through one helper, op("operationId", …) (self._op in Python,
// this.op in TypeScript).
var sdkSources = map[string]struct{ dir, ext, generated string }{
	"python":     {"sdk/python/sandgate", ".py", "_schema.py"},
	"typescript": {"sdk/typescript/src", ".ts", "schema.ts"},
}

var opCall = regexp.MustCompile(`[._]op\(\s*["']([A-Za-z]+)["']`)

// TestSDKsCoverTheOperations is the other half of the CI check: every
// public operation of openapi.json is called by each SDK, and each SDK
// calls only operations the description has.
func TestSDKsCoverTheOperations(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, spec))
	require.NoError(t, err)
	a, err := load(raw)
	require.NoError(t, err)
	public := map[string]bool{}
	for _, o := range a.ops {
		if _, ok := internalOps[o.id]; !ok {
			public[o.id] = true
		}
	}
	for name, src := range sdkSources {
		t.Run(name, func(t *testing.T) {
			used := map[string]bool{}
			files, err := filepath.Glob(filepath.Join(root, src.dir, "*"+src.ext))
			require.NoError(t, err)
			for _, f := range files {
				if filepath.Base(f) == src.generated {
					continue
				}
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				for _, m := range opCall.FindAllStringSubmatch(string(b), -1) {
					require.True(t, public[m[1]], "%s calls %q, which openapi.json does not describe (or is internal)", f, m[1])
					used[m[1]] = true
				}
			}
			for id := range public {
				require.True(t, used[id], "the %s SDK has no call of %q", name, id)
			}
		})
	}
}
