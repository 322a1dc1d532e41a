// Usage: git archive the InvoiceBox/invoicebox-mcp-server checkout into DIR, `npm ci && npm run
// build` there, copy this file to DIR/measure/ and run `node measure/reference_sizes.mjs`.
// Reference catalog sizes: MCP tools/list over stdio with the official client, and its
// own toFunctions() export wrapped the way each platform takes it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { buildServer } from '../dist/server.js';
import { loadConfig } from '../dist/config.js';
import { CATALOG } from '../dist/tools/catalog.js';
import { toFunctions } from '../dist/interop/functions.js';

const size = (value) => JSON.stringify(value).length;
// tools/list touches no runtime part: the server is built as index.js builds it, without the
// startup token check (which needs api.invoicebox.ru), and listed over an in-memory pair.
const config = loadConfig({ INVOICEBOX_API_TOKEN: 'b37c4c689295904ed21eee5d9a48d42e',
  INVOICEBOX_MERCHANT_ID: 'ffffffff-ffff-ffff-ffff-ffffffffffff', INVOICEBOX_ENV: 'demo',
  INVOICEBOX_TOOLSETS: 'read,write,refund' }, {});
const { server } = buildServer({ version: '0.2.1', runtime: { config } });
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const transport = clientSide;
const client = new Client({ name: 'measure', version: '0' });
await client.connect(transport);
const listed = await client.listTools();
await client.close();
const functions = toFunctions(CATALOG);
const openai = { tools: functions.map((f) => ({ type: 'function', function: f })) };
const out = {
  tools: listed.tools.length,
  mcp: size({ tools: listed.tools }),
  functions: size(functions),
  openai: size(openai),
  gigachat: size({ functions, function_call: 'auto' }),
  'gigachat-v2': size({ tools: [{ functions: { specifications: functions } }], tool_config: { mode: 'auto' } }),
  yandexgpt: size({ tools: functions.map((f) => ({ function: f })) }),
  hermes_tools_lines: functions.map((f) => JSON.stringify({ type: 'function', function: f })).join('\n').length,
};
console.log(JSON.stringify(out, null, 1));
if (process.env.DUMP_FUNCTIONS) (await import("node:fs")).writeFileSync(process.env.DUMP_FUNCTIONS, JSON.stringify(functions));
if (process.env.DUMP) (await import("node:fs")).writeFileSync(process.env.DUMP, JSON.stringify(listed));
