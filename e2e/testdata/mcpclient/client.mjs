// An MCP client from the TypeScript SDK (the npm package
// @modelcontextprotocol/sdk), run by e2e/mcp_integration_test.go: it starts
// `executor mcp` (argv[2], its environment inherited) over stdio and takes
// one round through the tools; any failure exits non-zero with the reason.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const sid = process.env.MCP_SESSION_ID;
const transport = new StdioClientTransport({
  command: process.argv[2],
  args: ["mcp", "--credential", "id=gh,name=GH_TOKEN,secret-env=MCP_E2E_SECRET,hosts=api.example.com,locations=headers"],
  env: process.env,
});
const client = new Client({ name: "sandgate-e2e-ts", version: "1.0.0" });

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
  check(!res.isError, `${name}: ${text}`);
  return res;
}

await client.connect(transport);
try {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(names.join() === "create_sandbox,delete_sandbox,exec,export_workspace,list_files,list_sandboxes,read_file,write_file",
    "tools: " + names.join());

  const created = await call("create_sandbox", {
    session_id: sid, image: "debian:bookworm", allowed_hosts: ["api.example.com"], credentials: ["gh"],
  });
  try {
    check(created.structuredContent.gated === true, "gated");
    const ran = await call("exec", { session_id: sid, command: "echo hello; exit 4" });
    check(ran.structuredContent.exit_code === 4 && ran.structuredContent.stdout === "hello\n", "exec: " + JSON.stringify(ran.structuredContent));
    await call("write_file", { session_id: sid, path: "/workspace/a.txt", content: "from typescript\n" });
    const read = await call("read_file", { session_id: sid, path: "/workspace/a.txt" });
    check(read.structuredContent.content === "from typescript\n", "read");
    const res = await client.readResource({ uri: `sandgate://sessions/${sid}/files/workspace/a.txt` });
    check(res.contents[0].text === "from typescript\n", "resource");
  } finally {
    await call("delete_sandbox", { session_id: sid });
  }
  const bad = await client.callTool({ name: "exec", arguments: { session_id: sid, command: "true" } });
  check(bad.isError && bad.content[0].text.includes("not_found"), "deleted: " + JSON.stringify(bad.content));
  console.log("mcp client: ok");
} finally {
  await client.close();
}
