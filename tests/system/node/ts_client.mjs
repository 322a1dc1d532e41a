// The official TypeScript SDK client, as an application would use it: SESSIONS sessions, each
// listing the tools, reading, finding, a two-phase create_order and one refusal.
// Usage: node ts_client.mjs URL KEY SESSIONS ORDER_JSON   (prints one JSON line per session)
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, sessions, orderJson] = process.argv.slice(2);
const order = JSON.parse(orderJson);

function envelope(result) {
  if (result.structuredContent) return result.structuredContent;
  return JSON.parse(result.content[0].text);
}

async function oneSession(index) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "gateway-system-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const steps = {};
    steps.protocol = transport.protocolVersion;
    steps.tools = (await client.listTools()).tools.map((tool) => tool.name);
    const call = async (name, args) => {
      const result = await client.callTool({ name, arguments: args });
      return { ...envelope(result), isError: Boolean(result.isError) };
    };
    steps.find = await call("find_orders", {});
    const args = { ...order, description: `${order.description} №${randomUUID().slice(0, 8)}` };
    steps.prepared = await call("create_order", args);
    const token = steps.prepared.confirmation?.token;
    steps.created = await call("create_order", { ...args, confirmation_token: token });
    steps.read = await call("get_order", { order_id: steps.created.data?.order_id });
    steps.refused = await call("create_order", { ...args, amount: "1" });
    await transport.terminateSession();
    return steps;
  } finally {
    await client.close();
  }
}

let failed = 0;
for (let index = 0; index < Number(sessions); index++) {
  try {
    console.log(JSON.stringify({ session: index, ...(await oneSession(index)) }));
  } catch (error) {
    failed++;
    console.log(JSON.stringify({ session: index, error: String(error) }));
  }
}
process.exit(failed ? 1 : 0);
