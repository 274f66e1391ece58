// The agent service of examples/13_agent_service on Node 22 + OpenAI Agents JS behind
// node:http, for bench/service_load.sh: POST /v1/runs {"message"} → {"id","status","answer"}
// with the same agent (instructions, word_count tool in process, Chat Completions against
// the fake LLM at FAKE_LLM_URL) and the same backpressure shape (MAX_CONCURRENT runs,
// MAX_QUEUED waiting, 503 + Retry-After beyond). GET /healthz. Prints
// "listening on http://127.0.0.1:PORT" (PORT=0 picks one).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Agent, run, tool, OpenAIProvider, setDefaultModelProvider, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';

const BASE_URL = process.env.FAKE_LLM_URL ?? 'http://127.0.0.1:8787/v1';
const MAX_CONCURRENT = Number(process.env.MAX_CONCURRENT ?? 4096);
const MAX_QUEUED = Number(process.env.MAX_QUEUED ?? 100000);

setTracingDisabled(true);
setDefaultModelProvider(new OpenAIProvider({ baseURL: BASE_URL, apiKey: 'sk-fake-local', useResponses: false }));
const wordCount = tool({
  name: 'word_count',
  description: 'Count the whitespace-separated words in a text.',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => String((String(text).match(/\S+/g) ?? []).length),
});
const agent = new Agent({
  name: 'counter',
  instructions: 'You count words. Always call the word_count tool, then report its result.',
  model: 'fake-model',
  tools: [wordCount],
});

let active = 0;
const waiting = [];
const acquire = () => (active < MAX_CONCURRENT ? (active++, Promise.resolve()) : new Promise((r) => waiting.push(r)));
const release = () => {
  const next = waiting.shift();
  if (next) next();
  else active--;
};

const send = (res, status, obj, headers = {}) => {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
};

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok\n');
    return;
  }
  if (req.method !== 'POST' || req.url !== '/v1/runs') return send(res, 404, { error: 'not found' });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    let message;
    try {
      message = JSON.parse(Buffer.concat(chunks).toString()).message;
    } catch {}
    if (typeof message !== 'string' || !message) return send(res, 400, { error: 'expected {"message": "..."}' });
    if (active >= MAX_CONCURRENT && waiting.length >= MAX_QUEUED)
      return send(res, 503, { error: 'too many runs in progress' }, { 'retry-after': '1' });
    const id = randomUUID();
    await acquire();
    try {
      const result = await run(agent, message);
      send(res, 200, { id, status: 'ok', answer: result.finalOutput });
    } catch (e) {
      send(res, 502, { id, status: 'error', error: String(e?.message ?? e) });
    } finally {
      release();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
