// The official SDKs against rath-fake-llm: what they parse is what a real service
// would have given them. Each test file starts its own server process.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const BIN = process.env.RATH_FAKE_LLM;
const USER = 'please count the words of session 42 w w w w w w';
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'word_count',
      description: 'Count the whitespace-separated words in a text.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
  },
];
const SYSTEM = { role: 'system', content: 'You count words.' };

const servers = [];
async function startServer(args = []) {
  const proc = spawn(BIN, ['--port', '0', '--quiet', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  servers.push(proc);
  const origin = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    proc.on('error', (err) => reject(new Error(`cannot start ${BIN}: ${err.message}`)));
    proc.on('exit', (code) => reject(new Error(`rath-fake-llm exited with ${code} before listening`)));
  });
  return origin;
}

let origin;
before(async () => {
  origin = await startServer();
});
after(() => {
  for (const p of servers) p.kill('SIGTERM');
});

const openai = (opts = {}) => new OpenAI({ apiKey: 'sk-fake', baseURL: `${origin}/v1`, maxRetries: 0, ...opts });
const anthropic = (opts = {}) => new Anthropic({ apiKey: 'sk-ant-fake', baseURL: origin, maxRetries: 0, ...opts });

const toolTurn = [
  SYSTEM,
  { role: 'user', content: USER },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'word_count', arguments: '{}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '12' },
];

test('openai: a non-streaming tool call is parsed with its arguments and usage', async () => {
  const r = await openai().chat.completions.create({ model: 'fake-model', messages: [SYSTEM, { role: 'user', content: USER }], tools: TOOLS });
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, 'fake-model');
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, 'word_count');
  assert.deepEqual(JSON.parse(call.function.arguments), { text: USER });
  assert.deepEqual(r.usage, { prompt_tokens: 24, completion_tokens: 21, total_tokens: 45 });
});

test('openai: a tool result gets the final text', async () => {
  const r = await openai().chat.completions.create({ model: 'fake-model', messages: toolTurn, tools: TOOLS });
  assert.equal(r.choices[0].message.content, 'done: 12');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.usage.total_tokens, 35);
});

test('openai: streaming chunks accumulate into a tool call with usage', async () => {
  const stream = await openai().chat.completions.create({
    model: 'fake-model',
    messages: [SYSTEM, { role: 'user', content: USER }],
    tools: TOOLS,
    stream: true,
    stream_options: { include_usage: true },
  });
  let args = '';
  let name = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      for (const tc of choice.delta.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        args += tc.function?.arguments ?? '';
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(chunks, 6);
  assert.equal(name, 'word_count');
  assert.deepEqual(JSON.parse(args), { text: USER });
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(usage, { prompt_tokens: 24, completion_tokens: 21, total_tokens: 45 });
});

test('openai: the stream helper assembles the final completion', async () => {
  const stream = openai().chat.completions.stream({ model: 'fake-model', messages: toolTurn, stream_options: { include_usage: true } });
  let text = '';
  stream.on('content', (delta) => {
    text += delta;
  });
  const final = await stream.finalChatCompletion();
  assert.equal(text, 'done: 12');
  assert.equal(final.choices[0].message.content, 'done: 12');
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.usage.completion_tokens, 2);
});

test('openai: a 429 becomes a RateLimitError with the retry-after header', async () => {
  await assert.rejects(
    openai().chat.completions.create(
      { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-fake-fault': '429', 'x-fake-retry-after': '3' } },
    ),
    (err) => {
      assert.ok(err instanceof OpenAI.RateLimitError, `got ${err?.constructor?.name}`);
      assert.equal(err.status, 429);
      assert.equal(err.code, 'rate_limit_exceeded');
      assert.equal(err.headers.get('retry-after'), '3');
      return true;
    },
  );
});

test('openai: an error inside the stream is raised by the iterator', async () => {
  const stream = await openai().chat.completions.create(
    { model: 'fake-model', messages: toolTurn, stream: true },
    { headers: { 'x-fake-fault': 'stream-error' } },
  );
  let text = '';
  await assert.rejects(
    (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    })(),
    (err) => err instanceof OpenAI.APIError && /server had an error/.test(err.message),
  );
  assert.ok(text.length < 'done: 12'.length);
});

test('openai: embeddings decode from the default base64 encoding', async () => {
  const r = await openai().embeddings.create({ model: 'text-embedding-3-small', input: ['the cat sat', 'the cat sat on the mat'] });
  assert.equal(r.data.length, 2);
  assert.equal(r.data[0].embedding.length, 1536);
  const norm = Math.sqrt(r.data[0].embedding.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-5);
  assert.equal(r.usage.prompt_tokens, 9);
});

test('openai: models are listed', async () => {
  const ids = [];
  for await (const m of openai().models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['fake-model']);
});

test('openai: the SDK retries a scripted 429 and then succeeds', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fake-llm-'));
  const script = join(dir, 'retry.json');
  writeFileSync(
    script,
    JSON.stringify({
      rules: [{ match: { role: 'user' }, respond: { fault: '429', retry_after: 0 }, times: 1 }],
      responses: [{ text: 'after retry' }],
    }),
  );
  const scripted = await startServer(['--script', script]);
  const client = new OpenAI({ apiKey: 'sk-fake', baseURL: `${scripted}/v1`, maxRetries: 2 });
  const r = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(r.choices[0].message.content, 'after retry');
  const stats = await (await fetch(`${scripted}/stats`)).json();
  assert.equal(stats.requests, 2);
  assert.equal(stats.faults, 1);
  rmSync(dir, { recursive: true });
});

test('anthropic: a non-streaming tool_use block is parsed with usage', async () => {
  const r = await anthropic().messages.create({
    model: 'claude-fake',
    max_tokens: 256,
    system: 'You count words.',
    messages: [{ role: 'user', content: USER }],
  });
  assert.equal(r.type, 'message');
  assert.equal(r.role, 'assistant');
  assert.equal(r.model, 'claude-fake');
  assert.equal(r.stop_reason, 'tool_use');
  assert.equal(r.content.length, 1);
  assert.equal(r.content[0].type, 'tool_use');
  assert.equal(r.content[0].name, 'word_count');
  assert.deepEqual(r.content[0].input, { text: USER });
  assert.equal(r.usage.input_tokens, 24);
  assert.equal(r.usage.output_tokens, 21);
});

test('anthropic: the message stream assembles tool input from partial json', async () => {
  const stream = anthropic().messages.stream({ model: 'claude-fake', max_tokens: 256, messages: [{ role: 'user', content: USER }] });
  const events = [];
  stream.on('streamEvent', (e) => events.push(e.type));
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  assert.deepEqual(final.content[0].input, { text: USER });
  assert.equal(final.usage.output_tokens, 21);
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
});

test('anthropic: streamed text arrives through text events', async () => {
  const stream = anthropic().messages.stream({
    model: 'claude-fake',
    max_tokens: 256,
    messages: [
      { role: 'user', content: USER },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'word_count', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '12' }] },
    ],
  });
  let text = '';
  stream.on('text', (t) => {
    text += t;
  });
  const final = await stream.finalMessage();
  assert.equal(text, 'done: 12');
  assert.equal(final.stop_reason, 'end_turn');
  assert.deepEqual(final.content, [{ type: 'text', text: 'done: 12' }]);
});

test('anthropic: a 529 becomes an overloaded error', async () => {
  await assert.rejects(
    anthropic().messages.create(
      { model: 'claude-fake', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-fake-fault': '529' } },
    ),
    (err) => {
      assert.ok(err instanceof Anthropic.APIError, `got ${err?.constructor?.name}`);
      assert.equal(err.status, 529);
      assert.equal(err.error.error.type, 'overloaded_error');
      return true;
    },
  );
});

test('anthropic: an error event inside the stream rejects the final message', async () => {
  const stream = anthropic().messages.stream(
    { model: 'claude-fake', max_tokens: 16, messages: [{ role: 'user', content: USER }] },
    { headers: { 'x-fake-fault': 'stream-error' } },
  );
  await assert.rejects(stream.finalMessage(), (err) => err instanceof Anthropic.APIError && /Overloaded/.test(err.message));
});
