// The official OpenSandbox TypeScript SDK (@alibaba-group/opensandbox, pinned in
// package-lock.json) against a rath-sandbox-server process: every call below goes
// through the SDK's own lifecycle and execd clients, so the server's wire format is
// checked from outside. Code contexts use the SDK's execd client and its event
// dispatcher (the code-interpreter SDK is not published on npm).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, mkdirSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox, SandboxApiException, ExecutionEventDispatcher } from "@alibaba-group/opensandbox";
import { createExecdClient } from "@alibaba-group/opensandbox/internal";

const bin = process.env.RATH_SANDBOX_SERVER;
const API_KEY = "rath-test-key";
let server, domain, stateDir, allowedDir;

before(async () => {
  assert.ok(bin, "RATH_SANDBOX_SERVER must name the rath-sandbox-server binary");
  stateDir = mkdtempSync(join(tmpdir(), "rath-sbx-sdk-"));
  allowedDir = join(stateDir, "allowed");
  mkdirSync(allowedDir);
  // Host permissions apply inside (the sandbox user is nobody): the shared directory is
  // open to it, the rest of the scratch tree only traversable.
  chmodSync(stateDir, 0o711);
  chmodSync(allowedDir, 0o777);
  server = spawn(bin, ["--port", "0", "--state-dir", join(stateDir, "state"), "--api-key", API_KEY,
    "--allow-host-path", allowedDir, "--quiet"], { stdio: ["ignore", "pipe", "inherit"] });
  domain = await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/(\S+)/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`rath-sandbox-server exited with ${code}`)));
  });
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.on("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  rmSync(stateDir, { recursive: true, force: true });
});

const conn = (apiKey = API_KEY) => ({ domain, apiKey, requestTimeoutSeconds: 60 });

async function create(extra = {}) {
  return Sandbox.create({
    connectionConfig: conn(),
    image: "host",
    entrypoint: ["tail", "-f", "/dev/null"],
    resource: { cpu: "1", memory: "512Mi" },
    timeoutSeconds: 300,
    readyTimeoutSeconds: 30,
    ...extra,
  });
}

async function rejectsWith(promise, status, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof SandboxApiException, `expected SandboxApiException, got ${e}`);
    assert.equal(e.statusCode, status, e.message);
    if (code) assert.equal(e.error?.code, code, e.message);
    return true;
  });
}

// /code with the SDK's execd client for contexts and its event dispatcher for the stream.
async function codeClient(sbx) {
  const ep = await sbx.getEndpoint(44772);
  const baseUrl = `http://${ep.endpoint}`;
  const headers = { ...(ep.headers ?? {}) };
  const client = createExecdClient({ baseUrl, headers });
  const run = async (code, context) => {
    const res = await fetch(`${baseUrl}/code`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify({ code, context }),
    });
    assert.equal(res.status, 200);
    const execution = { logs: { stdout: [], stderr: [] }, result: [] };
    const dispatcher = new ExecutionEventDispatcher(execution);
    for (const block of (await res.text()).split("\n")) {
      const line = block.trim();
      if (line.startsWith("data:")) await dispatcher.dispatch(JSON.parse(line.slice(5)));
    }
    return execution;
  };
  return { client, run };
}

test("a sandbox is created, becomes Running and answers ping through the SDK", async () => {
  const sbx = await create({ metadata: { suite: "rath-sdk", case: "create" } });
  try {
    const info = await sbx.getInfo();
    assert.equal(info.status.state, "Running");
    assert.equal(info.image.uri, "host");
    assert.deepEqual(info.entrypoint, ["tail", "-f", "/dev/null"]);
    assert.ok(info.expiresAt instanceof Date && info.expiresAt > new Date());
    assert.equal(await sbx.isHealthy(), true);
    const list = await sbx.sandboxes.listSandboxes({ states: ["Running"], metadata: { suite: "rath-sdk", case: "create" } });
    assert.deepEqual(list.items.map((s) => s.id), [sbx.id]);
    const none = await sbx.sandboxes.listSandboxes({ metadata: { suite: "other" } });
    assert.equal(none.items.length, 0);
    const metrics = await sbx.getMetrics();
    assert.ok(metrics.memTotalMiB > 0 || metrics.mem_total_mib > 0 || Object.keys(metrics).length > 0);
  } finally {
    await sbx.kill();
    await sbx.close();
  }
});

test("commands stream their output as it is written and report exit codes", async () => {
  const sbx = await create();
  try {
    const seen = [];
    const t0 = Date.now();
    const ex = await sbx.commands.run("echo first; sleep 0.6; echo second; echo oops >&2", {}, {
      onStdout: (m) => seen.push([m.text, Date.now() - t0]),
    });
    const done = Date.now() - t0;
    assert.equal(ex.exitCode, 0);
    assert.equal(ex.logs.stdout.map((m) => m.text).join(""), "first\nsecond\n");
    assert.equal(ex.logs.stderr.map((m) => m.text).join(""), "oops\n");
    assert.equal(seen[0][0], "first\n");
    assert.ok(done - seen[0][1] >= 400, `the first line arrived ${done - seen[0][1]} ms before the end: not streamed`);
    const failed = await sbx.commands.run("echo partial; exit 7");
    assert.equal(failed.exitCode, 7);
    assert.equal(failed.error.name, "CommandExecError");
    const env = await sbx.commands.run("echo $GREETING $(id -u) $(pwd)", { envs: { GREETING: "hi" }, workingDirectory: "/tmp" });
    assert.equal(env.logs.stdout.map((m) => m.text).join(""), "hi 65534 /tmp\n");
    const net = await sbx.commands.run("cat /proc/net/dev | wc -l");
    assert.equal(net.exitCode, 0);
    assert.ok(Number(net.logs.stdout.map((m) => m.text).join("").trim()) <= 3, "only the loopback device: no network");
  } finally {
    await sbx.kill();
  }
});

test("a background command runs on, shows its logs and status, and is killed by interrupt", async () => {
  const sbx = await create();
  try {
    const bg = await sbx.commands.run("echo started; sleep 60", { background: true });
    assert.ok(bg.id, "background run returns its command id");
    let status = await sbx.commands.getCommandStatus(bg.id);
    assert.equal(status.running, true);
    let logs;
    for (let i = 0; i < 50; i++) {
      logs = await sbx.commands.getBackgroundCommandLogs(bg.id);
      if (logs.content.includes("started")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(logs.content, /started/);
    assert.equal(logs.cursor, 1);
    await sbx.commands.interrupt(bg.id);
    for (let i = 0; i < 50 && status.running; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await sbx.commands.getCommandStatus(bg.id);
    }
    assert.equal(status.running, false);
    assert.equal(status.exitCode, 137);
    assert.ok(status.finishedAt instanceof Date);
    // The killed tree is gone from the sandbox (SIGKILL lands at once, the reaping by
    // the sandbox's init a moment later).
    let left = "";
    for (let i = 0; i < 30; i++) {
      const ps = await sbx.commands.run("ps -eo stat=,comm= | grep -v '^Z' | grep -c ' sleep$' || true");
      left = ps.logs.stdout.map((m) => m.text).join("").trim();
      if (left === "0") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(left, "0");
  } finally {
    await sbx.kill();
  }
});

test("files go up and down, with ranges, info, search, directories, moves and modes", async () => {
  const sbx = await create();
  try {
    await sbx.files.writeFiles([{ path: "/workspace/docs/a.txt", data: "hello file", mode: 640 }]);
    assert.equal(await sbx.files.readFile("/workspace/docs/a.txt"), "hello file");
    assert.equal(await sbx.files.readFile("/workspace/docs/a.txt", { range: "bytes=6-9" }), "file");
    const info = await sbx.files.getFileInfo(["/workspace/docs/a.txt"]);
    assert.equal(info["/workspace/docs/a.txt"].size, 10);
    assert.equal(info["/workspace/docs/a.txt"].mode, 640);
    assert.equal(info["/workspace/docs/a.txt"].type, "file");
    assert.equal(info["/workspace/docs/a.txt"].owner, "nobody");
    const seen = await sbx.commands.run("cat /workspace/docs/a.txt; stat -c %a /workspace/docs/a.txt");
    assert.equal(seen.logs.stdout.map((m) => m.text).join(""), "hello file640\n");
    await sbx.files.writeFiles([{ path: "/workspace/docs/b.md", data: new Uint8Array([0, 1, 2, 255]) }]);
    assert.deepEqual([...(await sbx.files.readBytes("/workspace/docs/b.md"))], [0, 1, 2, 255]);
    const found = await sbx.files.search({ path: "/workspace", pattern: "*.txt" });
    assert.deepEqual(found.map((f) => f.path), ["/workspace/docs/a.txt"]);
    await sbx.files.createDirectories([{ path: "/workspace/x/y", mode: 700 }]);
    const dirInfo = await sbx.files.getFileInfo(["/workspace/x/y"]);
    assert.equal(dirInfo["/workspace/x/y"].type, "directory");
    assert.equal(dirInfo["/workspace/x/y"].mode, 700);
    await sbx.files.moveFiles([{ src: "/workspace/docs/a.txt", dest: "/workspace/x/y/a.txt" }]);
    assert.equal(await sbx.files.readFile("/workspace/x/y/a.txt"), "hello file");
    await sbx.files.replaceContents([{ path: "/workspace/x/y/a.txt", oldContent: "hello", newContent: "bye" }]);
    assert.equal(await sbx.files.readFile("/workspace/x/y/a.txt"), "bye file");
    const listing = await sbx.files.listDirectory({ path: "/workspace", depth: 1 });
    assert.deepEqual(listing.map((f) => f.path), ["/workspace/docs", "/workspace/x"]);
    await sbx.files.deleteFiles(["/workspace/x/y/a.txt"]);
    await rejectsWith(sbx.files.readFile("/workspace/x/y/a.txt"), 404);
    await sbx.files.deleteDirectories(["/workspace/x"]);
    await rejectsWith(sbx.files.getFileInfo(["/workspace/x"]), 404, "FILE_NOT_FOUND");
    // The sandbox's root is its own: /etc/shadow of the host is not in it, /usr is read-only.
    await rejectsWith(sbx.files.getFileInfo(["/etc/shadow"]), 404);
    await assert.rejects(sbx.files.writeFiles([{ path: "/usr/rath-test", data: "x" }]));
  } finally {
    await sbx.kill();
  }
});

test("code contexts keep their state in long-lived python and bash interpreters", async () => {
  const sbx = await create();
  try {
    const { client, run } = await codeClient(sbx);
    const py = await client.POST("/code/context", { body: { language: "python" } });
    assert.equal(py.response.status, 200);
    assert.equal(py.data.language, "python");
    const ctx = { id: py.data.id, language: "python" };
    const first = await run("x = 20\nprint('set')", ctx);
    assert.equal(first.logs.stdout.map((m) => m.text).join(""), "set\n");
    const second = await run("x * 2 + 2", ctx);
    assert.equal(second.result[0].text, "42");
    assert.equal(second.executionCount, 2);
    const err = await run("1/0", ctx);
    assert.equal(err.error.name, "ZeroDivisionError");
    const bash = await client.POST("/code/context", { body: { language: "bash" } });
    const bctx = { id: bash.data.id, language: "bash" };
    await run("export FOO=bar; cd /tmp", bctx);
    const b = await run("echo $FOO $(pwd)", bctx);
    assert.equal(b.logs.stdout.map((m) => m.text).join(""), "bar /tmp\n");
    const listed = await client.GET("/code/contexts", { params: { query: { language: "python" } } });
    assert.deepEqual(listed.data.map((c) => c.id), [ctx.id]);
    const del = await client.DELETE("/code/contexts/{context_id}", { params: { path: { context_id: ctx.id } } });
    assert.equal(del.response.status, 200);
    const gone = await client.GET("/code/contexts/{context_id}", { params: { path: { context_id: ctx.id } } });
    assert.equal(gone.response.status, 404);
    assert.equal(gone.error.code, "CONTEXT_NOT_FOUND");
  } finally {
    await sbx.kill();
  }
});

test("pause freezes the sandbox and resume brings it back with its processes", async () => {
  const sbx = await create();
  try {
    await sbx.commands.run("echo kept > /tmp/state");
    await sbx.pause();
    assert.equal((await sbx.getInfo()).status.state, "Paused");
    assert.equal(await sbx.isHealthy(), false);
    const resumed = await sbx.resume();
    assert.equal((await resumed.getInfo()).status.state, "Running");
    const r = await resumed.commands.run("cat /tmp/state");
    assert.equal(r.logs.stdout.map((m) => m.text).join(""), "kept\n");
    await rejectsWith(resumed.sandboxes.resumeSandbox(sbx.id), 409);
  } finally {
    await sbx.kill();
  }
});

test("renew moves expiresAt and kill removes the sandbox", async () => {
  const sbx = await create();
  const before = (await sbx.getInfo()).expiresAt;
  const renewed = await sbx.renew(1800);
  assert.ok(renewed.expiresAt > before);
  const info = await sbx.getInfo();
  assert.equal(info.expiresAt.getTime(), renewed.expiresAt.getTime());
  await sbx.kill();
  await rejectsWith(sbx.getInfo(), 404, "BWRAP::SANDBOX_NOT_FOUND");
});

test("a host volume under the allow-list is bound read-write", async () => {
  const sbx = await create({ volumes: [{ name: "data", host: { path: allowedDir }, mountPath: "/data", readOnly: false }] });
  try {
    const w = await sbx.commands.run("echo from-sandbox > /data/out.txt");
    assert.equal(w.exitCode, 0, w.logs.stderr.map((m) => m.text).join(""));
    assert.equal(readFileSync(join(allowedDir, "out.txt"), "utf8"), "from-sandbox\n");
  } finally {
    await sbx.kill();
  }
});

test("an entrypoint that exits turns the sandbox Failed with its exit code", async () => {
  const sbx = await create({ entrypoint: ["sh", "-c", "echo going; exit 3"], skipHealthCheck: true });
  try {
    let info;
    for (let i = 0; i < 100; i++) {
      info = await sbx.getInfo();
      if (info.status.state === "Failed") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(info.status.state, "Failed");
    assert.equal(info.status.reason, "ENTRYPOINT_EXITED");
    assert.match(info.status.message, /code 3/);
  } finally {
    await sbx.kill();
  }
});

test("errors: bad image, refused volumes, wrong API key, unknown id", async () => {
  await rejectsWith(create({ image: "python:3.11" }), 400, "BWRAP::SANDBOX_IMAGE_NOT_FOUND");
  await rejectsWith(create({ volumes: [{ name: "etc", host: { path: "/etc" }, mountPath: "/hostetc" }] }), 400,
    "VOLUME::HOST_PATH_NOT_ALLOWED");
  await rejectsWith(create({ volumes: [{ name: "v", pvc: { claimName: "c" }, mountPath: "/v" }] }), 400,
    "VOLUME::UNSUPPORTED_BACKEND");
  await rejectsWith(create({ volumes: [{ name: "Bad_Name", host: { path: allowedDir }, mountPath: "/v" }] }), 400,
    "VOLUME::INVALID_NAME");
  await rejectsWith(Sandbox.create({ connectionConfig: conn("wrong"), image: "host", entrypoint: ["true"] }), 401,
    "INVALID_API_KEY");
  await rejectsWith(Sandbox.connect({ connectionConfig: conn(), sandboxId: "no-such-sandbox" }), 404,
    "BWRAP::SANDBOX_NOT_FOUND");
  // Refused creations leave no sandbox behind.
  const res = await fetch(`http://${domain}/v1/sandboxes`, { headers: { "OPEN-SANDBOX-API-KEY": API_KEY } });
  const body = await res.json();
  assert.deepEqual(body.items.filter((s) => s.status.state !== "Terminated"), []);
  assert.ok(existsSync(stateDir));
});
