// The lineage viewer page in headless Chromium (run by viewer_browser.sh, which writes
// the pages into RATH_VIEWER_WORK first). Each page must load from file:// with no
// console error, no page error and no request that leaves the file; clicking a node in
// the graph must show that session's transcript; the 10,000-session page must be
// ready (its first frame painted) within RATH_VIEWER_BUDGET_MS. Screenshots are saved
// beside the pages and their paths printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const work = process.env.RATH_VIEWER_WORK;
const executablePath = process.env.RATH_CHROMIUM || '/usr/bin/chromium';
const example02Id = process.env.RATH_VIEWER_EXAMPLE02_ID;
const budgetMs = Number(process.env.RATH_VIEWER_BUDGET_MS || 5000);
assert.ok(work, 'RATH_VIEWER_WORK is not set (run viewer_browser.sh)');

let browser;
before(async () => {
  // Root in a container has no user namespaces for Chromium's sandbox.
  browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
});
after(async () => { if (browser) await browser.close(); });

// The page's embedded data, read the way the page reads it.
function pageData(file) {
  const html = readFileSync(file, 'utf8');
  const m = html.match(/<script type="application\/json" id="rath-data">([\s\S]*?)<\/script>/);
  assert.ok(m, `${file} has no data block`);
  return JSON.parse(m[1]);
}

// Opens `file` and records everything that would make the page untrustworthy.
async function open(file, viewport = { width: 1600, height: 900 }) {
  const page = await browser.newPage({ viewport });
  const problems = [];
  page.on('console', (msg) => { if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console ${msg.type()}: ${msg.text()}`); });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('requestfailed', (req) => problems.push(`failed request: ${req.url()} ${req.failure()?.errorText}`));
  page.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith('file:') && !url.startsWith('data:')) problems.push(`network request: ${url}`);
  });
  const t0 = Date.now();
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
  return { page, problems, readyAfterMs: Date.now() - t0 };
}

// Clicks node `id` where the canvas draws it (a real mouse click on its centre).
async function clickNode(page, id) {
  await page.evaluate((sid) => window.rathViewer.centerOn(sid), id);
  const at = await page.evaluate((sid) => window.rathViewer.nodeScreenPosition(sid), id);
  assert.ok(at, `node ${id} is not on screen after centring on it`);
  await page.mouse.click(at.x, at.y);
  await page.waitForFunction((sid) => window.rathViewer.selected === sid, id, { timeout: 5000 });
}

async function screenshot(page, name) {
  const path = join(work, name);
  await page.screenshot({ path });
  console.log(`screenshot: ${path}`);
}

test('the rath command export of example 02 loads cleanly and a node click shows its transcript, tool call and usage', async () => {
  assert.ok(example02Id, 'no session id from example 02');
  const file = join(work, 'example02.html');
  const data = pageData(file);
  assert.deepEqual(data.sessions.map((s) => s.id), [example02Id]);
  const { page, problems } = await open(file);
  await clickNode(page, example02Id);
  const detail = page.locator('#detail-body');
  await detail.getByText('Paris, per the lookup tool.').waitFor({ timeout: 5000 });
  const text = await detail.innerText();
  assert.match(text, new RegExp(example02Id));
  assert.match(text, /call lookup \(id call_1\) \{"country": "France"\}/);
  assert.match(text, /tool_result/);
  assert.match(text, /\{"capital": "Paris"\}/);
  assert.match(text, /prompt 30, completion 9, total 39/);
  assert.match(text, /Session\.fork/);
  // The parents it was forked from were not persisted: drawn, and named as outside.
  assert.equal(await page.evaluate(() => window.rathViewer.nodes), 1 + data.sessions[0].parent_session_ids.length);
  await screenshot(page, 'example02.png');
  assert.deepEqual(problems, []);
  await page.close();

  // The selection is kept in the address: opening #<id> shows that session at once.
  const again = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await again.goto(pathToFileURL(file).href + '#' + example02Id);
  await again.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
  assert.equal(await again.evaluate(() => window.rathViewer.selected), example02Id);
  await again.locator('#detail-body').getByText('Paris, per the lookup tool.').waitFor({ timeout: 5000 });
  await again.close();
});

test('the demo page draws its agent sessions, a click shows a tool round trip and search finds a session by id', async () => {
  const file = join(work, 'demo', 'lineage.html');
  const data = pageData(file);
  const loop = data.sessions.find((s) => s.lineage_kind === 'op_session_loop');
  assert.ok(loop, 'the demo exported no loop output');
  const { page, problems } = await open(file);
  assert.equal(await page.evaluate(() => window.rathViewer.sessions), data.sessions.length);
  await clickNode(page, loop.id);
  const detail = page.locator('#detail-body');
  await detail.getByText(/^done: /).first().waitFor({ timeout: 5000 });
  const text = await detail.innerText();
  assert.match(text, /please count the words of session \d+/);
  assert.match(text, /call word_count/);
  assert.match(text, /tool_result/);
  assert.match(text, /parents \(2\)/i);

  await page.fill('#search', loop.id.slice(0, 13));
  await page.locator('#list-info').getByText(/^1 match for/).waitFor({ timeout: 5000 });
  assert.equal(await page.locator('.item').count(), 1);
  await screenshot(page, 'demo.png');
  assert.deepEqual(problems, []);
  await page.close();
});

test(`the 10,000-session page is ready within ${budgetMs} ms, stays responsive and shows a clicked session`, async () => {
  const file = join(work, 'big.html');
  const data = pageData(file);
  assert.equal(data.sessions.length, 10000);
  const { page, problems, readyAfterMs } = await open(file);
  const stats = await page.evaluate(() => ({ ...window.rathViewer }));
  console.log(`10,000 sessions: ready ${readyAfterMs} ms after navigation (layout ${stats.layoutMs.toFixed(0)} ms, ` +
              `first frame ${stats.readyMs.toFixed(0)} ms in page), ${stats.edges} edges, ${stats.generations} generations`);
  assert.equal(stats.sessions, 10000);
  assert.ok(readyAfterMs <= budgetMs, `ready after ${readyAfterMs} ms, budget ${budgetMs} ms`);
  // The list is virtualised: only the rows in view exist.
  assert.ok(await page.locator('.item').count() < 100);

  // A text search over every transcript, then a click on the deepest session.
  const t0 = Date.now();
  await page.fill('#search', 'finished task 9999:');
  await page.locator('#list-info').getByText(/^1 match for/).waitFor({ timeout: budgetMs });
  const searchMs = Date.now() - t0;
  console.log(`text search over 10,000 transcripts: ${searchMs} ms`);
  const last = data.sessions[9999];
  await clickNode(page, last.id);
  await page.locator('#detail-body').getByText('Finished task 9999: 2 words.').waitFor({ timeout: 5000 });
  await screenshot(page, 'big.png');

  // Zoomed out to the whole graph every session is in view; a frame must still be quick.
  await page.click('#zoom-fit');
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  const frame = await page.evaluate(() => ({ ms: window.rathViewer.lastFrameMs, nodes: window.rathViewer.lastFrameNodes }));
  console.log(`zoomed out: ${frame.nodes} nodes drawn in ${frame.ms.toFixed(1)} ms`);
  assert.ok(frame.nodes >= 10000, `only ${frame.nodes} nodes in view zoomed out`);
  assert.ok(frame.ms < 500, `a zoomed-out frame took ${frame.ms} ms`);
  await screenshot(page, 'big-zoomed-out.png');
  assert.deepEqual(problems, []);
  await page.close();
});
