// The official TypeScript SDK's Streamable HTTP client in a web page (bundled for the browser by
// esbuild in tests/system/test_browser_client.py): window.runMcp(url, key, order) opens a session
// from the page's origin, lists the tools, creates the order (two phases), finds orders, reads
// the new one, closes the session, and resolves to what it saw; a failure resolves to { error }
// (a refused origin is a failed fetch).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

function envelope(result) {
  const data = result.structuredContent ?? JSON.parse(result.content[0].text);
  return { ...data, isError: Boolean(result.isError) };
}

async function runMcp(url, key, order) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "gateway-browser-test", version: "1.0.0" });
  const seen = { origin: window.location.origin };
  try {
    await client.connect(transport);
    // Read from the response header: undefined unless CORS exposes Mcp-Session-Id.
    seen.sessionId = transport.sessionId ?? null;
    seen.protocol = transport.protocolVersion ?? null;
    seen.tools = (await client.listTools()).tools.map((tool) => tool.name);
    const call = async (name, args) => envelope(await client.callTool({ name, arguments: args }));
    seen.prepared = await call("create_order", order);
    const token = seen.prepared.confirmation?.token;
    seen.created = await call("create_order", { ...order, confirmation_token: token });
    seen.find = await call("find_orders", {});
    seen.read = await call("get_order", { order_id: seen.created.data?.order_id });
    await transport.terminateSession();
    seen.terminated = transport.sessionId === undefined;
  } catch (error) {
    seen.error = String(error);
  } finally {
    await client.close().catch(() => {});
  }
  return seen;
}

window.runMcp = runMcp;
