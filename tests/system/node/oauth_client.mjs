// The official TypeScript SDK's OAuth client provider against the gateway's /mcp:
// discovery, dynamic registration, authorization code with PKCE, then tools/list and a read.
// Usage: node oauth_client.mjs <mcp url> <loopback callback port>
// Prints one JSON line {"authorize": url} when the person must consent (the test drives the
// browser), then one JSON line {"tools": [...], "read": {...}, "scope": "..."} and exits 0.
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [mcpUrl, port] = process.argv.slice(2);
const redirectUrl = `http://127.0.0.1:${port}/callback`;

const codeArrived = new Promise((resolve, reject) => {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, redirectUrl);
    if (url.pathname !== "/callback") { res.writeHead(404).end(); return; }
    res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8" }).end("Готово: вернитесь в приложение.");
    server.close();
    const code = url.searchParams.get("code");
    code ? resolve(code) : reject(new Error(`no code: ${url.search}`));
  });
  server.listen(Number(port), "127.0.0.1");
});

// Everything in memory: one run, one client.
const store = {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: "TypeScript SDK test client", redirect_uris: [redirectUrl],
             grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
             token_endpoint_auth_method: "none" };
  },
  state() { return "ts-sdk-state"; },
  clientInformation() { return store.client; },
  saveClientInformation(info) { store.client = info; },
  tokens() { return store.tokens; },
  saveTokens(tokens) { store.tokens = tokens; },
  redirectToAuthorization(url) { console.log(JSON.stringify({ authorize: url.toString() })); },
  saveCodeVerifier(verifier) { store.verifier = verifier; },
  codeVerifier() { return store.verifier; },
};

const info = { name: "ts-sdk-oauth-test", version: "1.0.0" };
let transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
try {
  await new Client(info).connect(transport);
  throw new Error("connected without authorization");
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
}
await transport.finishAuth(await codeArrived);

transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
const client = new Client(info);
await client.connect(transport);
const tools = (await client.listTools()).tools.map((tool) => tool.name);
const read = await client.callTool({ name: "find_orders", arguments: { page_size: 1 } });
console.log(JSON.stringify({ tools, read: read.structuredContent, scope: store.tokens.scope }));
await client.close();
process.exit(0);
