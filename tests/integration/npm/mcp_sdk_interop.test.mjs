// The official MCP TypeScript SDK client drives rath-mcp-serve over stdio and over
// Streamable HTTP: list tools, call a built-in tool, call a config-defined agent (whose
// model is rath-fake-llm in echo mode) and read the run's transcript resource.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const SERVE = process.env.RATH_MCP_SERVE;
const FAKE_LLM = process.env.RATH_FAKE_LLM;
const children = [];
let dir;
let config;

function waitForListening(proc, what) {
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    proc.on('error', (err) => reject(new Error(`cannot start ${what}: ${err.message}`)));
    proc.on('exit', (code) => reject(new Error(`${what} exited with ${code} before listening`)));
  });
}

before(async () => {
  const llm = spawn(FAKE_LLM, ['--port', '0', '--quiet', '--echo'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(llm);
  const llmUrl = await waitForListening(llm, 'rath-fake-llm');
  dir = mkdtempSync(join(tmpdir(), 'rath-mcp-interop-'));
  config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      llm: {
        default_provider: 'fake',
        providers: { fake: { provider_kind: 'openai', base_url: `${llmUrl}/v1`, api_key: 'not-a-key', model: 'fake-model' } },
      },
      agents: { echoer: { system_prompt: 'You repeat what you are told.', provider: 'fake', description: 'Repeats the message.' } },
    }),
    { mode: 0o600 },
  );
});

after(() => {
  for (const p of children) p.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const serveArgs = () => ['--builtin-tools', '--agent', 'echoer', '--config', config, '--workdir', dir];

async function exercise(client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes('run_shell_command'), `tools: ${names}`);
  const echoer = tools.find((t) => t.name === 'echoer');
  assert.ok(echoer, `tools: ${names}`);
  assert.equal(echoer.description, 'Repeats the message.');
  assert.deepEqual(echoer.inputSchema.required, ['message']);

  const shell = await client.callTool({ name: 'run_shell_command', arguments: { cmd: 'echo interop' } });
  assert.notEqual(shell.isError, true, JSON.stringify(shell));
  assert.equal(JSON.parse(shell.content[0].text).stdout, 'interop\n');
  assert.equal(shell.structuredContent.exit_code, 0);

  const bad = await client.callTool({ name: 'echoer', arguments: { text: 'no message' } });
  assert.equal(bad.isError, true);

  const run = await client.callTool({ name: 'echoer', arguments: { message: 'hello from the sdk' } });
  assert.notEqual(run.isError, true, JSON.stringify(run));
  assert.equal(run.content[0].type, 'text');
  assert.equal(run.content[0].text, 'hello from the sdk');
  assert.equal(run.content[1].type, 'resource');
  const uri = run.content[1].resource.uri;
  assert.match(uri, /^rath:\/\/sessions\/[0-9a-f-]+$/);

  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === uri), JSON.stringify(resources));
  const read = await client.readResource({ uri });
  const lines = read.contents[0].text.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.length >= 4, read.contents[0].text);
  assert.ok(read.contents[0].text.includes('hello from the sdk'));
  assert.equal(read.contents[0].mimeType, 'application/x-ndjson');

  await assert.rejects(client.readResource({ uri: 'rath://sessions/none' }), /Resource not found/);
  await client.ping();
}

test('the TypeScript SDK client uses rath-mcp-serve over stdio', async () => {
  const transport = new StdioClientTransport({ command: SERVE, args: serveArgs(), stderr: 'inherit' });
  const client = new Client({ name: 'rath-interop', version: '1.0.0' });
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, 'rath-mcp-serve');
  await exercise(client);
  await client.close();
});

test('the TypeScript SDK client uses rath-mcp-serve over Streamable HTTP', async () => {
  const proc = spawn(SERVE, ['--http', '--port', '0', ...serveArgs()], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(proc);
  const url = await waitForListening(proc, 'rath-mcp-serve');
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'rath-interop', version: '1.0.0' });
  await client.connect(transport);
  assert.ok(transport.sessionId, 'the server gave a session id');
  await exercise(client);
  await transport.terminateSession();
  await client.close();

  // The ended session is gone: a request naming it is refused with 404.
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': transport.sessionId ?? 'x',
      'MCP-Protocol-Version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(res.status, 404);
});
