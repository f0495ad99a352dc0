/**
 * Which operations the SDK covers, read off its source as a checker would:
 * every call names its operationId as a literal through op("…").
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { OPERATIONS } from "sandgate";

const root = new URL("../../../../", import.meta.url);
const src = new URL("../../src/", import.meta.url);

/** The operations a client has no method for: the gate's, the probes, and the browser's preview routes. */
const notCovered = new Set([
  "gateConfig", "gateReport", "healthz", "readyz", "metrics", "openapi",
  "previewPortRoot", "previewPortGet", "previewPortPost", "previewPortPut", "previewPortPatch", "previewPortDelete",
]);

function used(): Set<string> {
  const ids = new Set<string>();
  for (const f of readdirSync(src)) {
    if (!f.endsWith(".ts") || f === "schema.ts") {
      continue;
    }
    for (const m of readFileSync(new URL(f, src), "utf8").matchAll(/\bop\("(\w+)"/g)) {
      ids.add(m[1]!);
    }
  }
  return ids;
}

test("every public operation of openapi.json has a call, named through op", () => {
  const spec = JSON.parse(readFileSync(new URL("cmd/executor/openapi.json", root), "utf8")) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  const ids = new Set<string>();
  for (const item of Object.values(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (method !== "parameters" && op.operationId !== undefined) {
        ids.add(op.operationId);
      }
    }
  }
  const have = used();
  const missing = [...ids].filter((id) => !notCovered.has(id) && !have.has(id));
  assert.deepEqual(missing, [], "operations without a call");
  const unknown = [...have].filter((id) => !ids.has(id));
  assert.deepEqual(unknown, [], "calls of operations openapi.json lacks");
  assert.deepEqual(Object.keys(OPERATIONS).sort(), [...ids].sort(), "schema.ts is openapi.json's");
});
