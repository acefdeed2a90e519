// End-to-end: the official MCP TypeScript SDK against a real sbxd over Streamable HTTP.
// Env: SBX_MCP_URL (http://127.0.0.1:P/mcp), SBX_TOKEN. Prints one line per test and a
// final "e2e: N passed, M failed"; exits non-zero on any failure.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const url = process.env.SBX_MCP_URL;
const token = process.env.SBX_TOKEN;
if (!url || !token) {
  console.error('mcp.test.mjs: SBX_MCP_URL and SBX_TOKEN must be set');
  process.exit(2);
}
const TEST_TIMEOUT_MS = 30000;

function connectClient(headers) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
  });
  const client = new Client({ name: 'sbx-e2e', version: '0.0.0' });
  return { client, transport };
}

// the transport throws StreamableHTTPError with the HTTP status in .code
const is401 = (e) => e?.code === 401 || /\b401\b/.test(String(e?.message));

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
const state = {};

// A tool result's structuredContent, after checking it is not an error.
function structured(res, what) {
  assert.ok(!res.isError, `${what}: isError: ${JSON.stringify(res.content)}`);
  assert.ok(res.structuredContent && typeof res.structuredContent === 'object',
    `${what}: no structuredContent: ${JSON.stringify(res)}`);
  assert.ok(Array.isArray(res.content), `${what}: no content array`);
  return res.structuredContent;
}

test('initialize and list tools with output schemas', async () => {
  const { client, transport } = connectClient({ Authorization: 'Bearer ' + token });
  await client.connect(transport);
  state.client = client;
  state.transport = transport;
  assert.ok(transport.sessionId, 'the server gave no Mcp-Session-Id');
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const name of ['sbx_create', 'sbx_run', 'sbx_exec', 'sbx_list']) {
    const t = byName.get(name);
    assert.ok(t, `tool ${name} missing; have ${[...byName.keys()].join(', ')}`);
    assert.equal(t.inputSchema?.type, 'object', `${name}: inputSchema.type`);
    assert.equal(t.outputSchema?.type, 'object', `${name}: outputSchema missing or not an object`);
  }
  // the policy is REST-only: no MCP tool may change it (DESIGN.md §6)
  for (const t of tools) assert.ok(!/polic/i.test(t.name), `tool ${t.name} touches the policy`);
});

test('ping', async () => {
  await state.client.ping();
});

test('sbx_create returns the sandbox', async () => {
  const res = await state.client.callTool({ name: 'sbx_create', arguments: { name: 'e2e' } });
  const sc = structured(res, 'sbx_create');
  assert.equal(typeof sc.id, 'string');
  assert.ok(sc.id.length > 0);
  assert.equal(sc.name, 'e2e');
  state.id = sc.id;
});

test('sbx_list includes it', async () => {
  const res = await state.client.callTool({ name: 'sbx_list', arguments: {} });
  const sc = structured(res, 'sbx_list');
  const list = Array.isArray(sc) ? sc : Object.values(sc).find(Array.isArray);
  assert.ok(Array.isArray(list), `no list in ${JSON.stringify(sc)}`);
  assert.ok(list.some((s) => s.id === state.id), `${state.id} not listed`);
});

test('sbx_run python in bwrap', async () => {
  assert.ok(state.id, 'no sandbox from sbx_create');
  const res = await state.client.callTool({
    name: 'sbx_run',
    arguments: { sandboxId: state.id, language: 'python', code: 'print(6*7)' },
  });
  const sc = structured(res, 'sbx_run');
  assert.equal(sc.stdout, '42\n');
  assert.equal(sc.exitCode, 0);
  assert.equal(sc.isolation, 'bwrap');
  assert.equal(sc.entrance, 'mcp');
  assert.equal(sc.sandboxId, state.id);
});

test('sbx_exec runs a shell command', async () => {
  const res = await state.client.callTool({ name: 'sbx_exec', arguments: { code: 'echo hi' } });
  const sc = structured(res, 'sbx_exec');
  assert.equal(sc.stdout, 'hi\n');
  assert.equal(sc.isolation, 'bwrap');
});

test('sbx_caps, sbx_get, sbx_update: the fence is visible and changeable', async () => {
  const caps = structured(await state.client.callTool({ name: 'sbx_caps', arguments: {} }), 'sbx_caps');
  assert.equal(caps.direct.ok, true, JSON.stringify(caps));
  const id = state.id;
  const got = structured(await state.client.callTool({ name: 'sbx_get', arguments: { sandboxId: id } }), 'sbx_get');
  assert.equal(got.id, id);
  assert.equal(got.fsMode, 'strict');
  const upd = structured(await state.client.callTool({
    name: 'sbx_update', arguments: { sandboxId: id, fsMode: 'allowlist', readPaths: ['/usr/share'] },
  }), 'sbx_update');
  assert.equal(upd.fsMode, 'allowlist');
  assert.deepEqual(upd.readPaths, ['/usr/share']);
});

test('sbx_mount refuses a credential directory and accepts a plain one; sbx_unmount removes it', async () => {
  const id = state.id;
  const bad = await state.client.callTool({
    name: 'sbx_mount', arguments: { sandboxId: id, source: '/etc', target: 'etc' },
  });
  assert.equal(bad.isError, true, JSON.stringify(bad));
  assert.ok(JSON.stringify(bad).includes('forbidden'), JSON.stringify(bad));
  const ok = structured(await state.client.callTool({
    name: 'sbx_mount', arguments: { sandboxId: id, source: '/usr/share/doc', target: 'doc' },
  }), 'sbx_mount');
  assert.ok(ok.mounts.some((m) => m.target === 'doc' && m.readOnly === true), JSON.stringify(ok));
  const run = structured(await state.client.callTool({
    name: 'sbx_run', arguments: { sandboxId: id, language: 'sh', code: 'ls doc | head -1 >/dev/null && echo seen; touch doc/x 2>/dev/null || echo ro' },
  }), 'sbx_run');
  assert.equal(run.stdout, 'seen\nro\n', JSON.stringify(run));
  const un = structured(await state.client.callTool({
    name: 'sbx_unmount', arguments: { sandboxId: id, target: 'doc' },
  }), 'sbx_unmount');
  assert.equal(un.mounts.length, 0);
});

// A tool error's text is the REST error document; its message names what was refused.
function errorMessage(res, what) {
  assert.equal(res.isError, true, `${what}: expected isError: ${JSON.stringify(res)}`);
  const doc = JSON.parse(res.content[0].text);
  return doc.error.message;
}

test('sbx_create refuses an unknown or read-only field by name and creates nothing', async () => {
  for (const [args, want] of [
    [{ name: 'typo', netwrok: true }, 'unknown field: netwrok'],
    [{ name: 'typo', limits: { timeout: 5 } }, 'unknown field: limits.timeout'],
    [{ name: 'typo', mounts: [{ source: '/usr/share/doc', target: 'd', ro: true }] }, 'unknown field: mounts[0].ro'],
    [{ name: 'typo', sandboxId: 'sbx_x' }, 'unknown field: sandboxId'],
    [{ name: 'typo', workdir: '/' }, 'read-only field: workdir'],
  ]) {
    const res = await state.client.callTool({ name: 'sbx_create', arguments: args });
    assert.equal(errorMessage(res, JSON.stringify(args)), want);
  }
  const list = structured(await state.client.callTool({ name: 'sbx_list', arguments: {} }), 'sbx_list');
  assert.ok(!list.sandboxes.some((s) => s.name === 'typo'), 'a refused create left a sandbox');
});

test('sbx_update refuses an unknown field by name; sandboxId is its one extra argument', async () => {
  const id = state.id;
  const res = await state.client.callTool({ name: 'sbx_update', arguments: { sandboxId: id, tracing: true, colour: 'red' } });
  assert.equal(errorMessage(res, 'sbx_update'), 'unknown field: colour');
  const got = structured(await state.client.callTool({ name: 'sbx_get', arguments: { sandboxId: id } }), 'sbx_get');
  assert.equal(got.tracing, false, 'a refused update changed the sandbox');
});

test('sbx_create takes mounts, ports and tracing; what is not enforced is noted on it and its runs', async () => {
  const sc = structured(await state.client.callTool({
    name: 'sbx_create',
    arguments: {
      name: 'e2e-fields', mounts: [{ source: '/usr/share/doc', target: 'doc' }],
      ports: { loopback: [8899] }, tracing: true,
    },
  }), 'sbx_create');
  assert.deepEqual(sc.mounts, [{ source: '/usr/share/doc', target: 'doc', readOnly: true }]);
  // a loopback port is a Landlock port rule: the note says it reaches that port on every host
  assert.match(sc.note ?? '', /every remote host/);
  assert.match(sc.note ?? '', /tracing observes Python and Node/);
  const run = structured(await state.client.callTool({
    name: 'sbx_run', arguments: { sandboxId: sc.id, language: 'sh', code: 'ls doc >/dev/null && echo seen' },
  }), 'sbx_run');
  assert.equal(run.stdout, 'seen\n', JSON.stringify(run));
  assert.match(run.note ?? '', /tracing observes Python and Node/, JSON.stringify(run));
  await state.client.callTool({ name: 'sbx_delete', arguments: { sandboxId: sc.id } });
});

test('sbx_create takes proxy.allow; a run reports the names it was refused', async () => {
  const sc = structured(await state.client.callTool({
    name: 'sbx_create',
    arguments: { name: 'e2e-proxy', proxy: { allow: ['allowed.invalid:443'] } },
  }), 'sbx_create');
  assert.deepEqual(sc.proxy, { allow: ['allowed.invalid:443'], allowPrivate: false });
  const run = structured(await state.client.callTool({
    name: 'sbx_run',
    arguments: { sandboxId: sc.id, language: 'sh', code: 'getent hosts other.invalid || echo refused' },
  }), 'sbx_run');
  assert.equal(run.stdout, 'refused\n', JSON.stringify(run));
  assert.ok(run.networkRefused.some((r) => r.kind === 'lookup' && r.host === 'other.invalid'),
    JSON.stringify(run.networkRefused));
  await state.client.callTool({ name: 'sbx_delete', arguments: { sandboxId: sc.id } });
});

test('sbx_run detach, sbx_ps lists it, sbx_kill refuses pid 1 and ends the run', async () => {
  const sc = structured(await state.client.callTool({ name: 'sbx_create', arguments: { name: 'e2e-ps' } }), 'sbx_create');
  const marker = `1000.${process.pid}${Date.now() % 100000}`;
  const started = structured(await state.client.callTool({
    name: 'sbx_run', arguments: { sandboxId: sc.id, code: `sleep ${marker}`, detach: true },
  }), 'sbx_run detach');
  assert.equal(started.status, 'running', JSON.stringify(started));
  let found;
  for (let i = 0; i < 50 && !found; i++) {
    const ps = structured(await state.client.callTool({ name: 'sbx_ps', arguments: { sandboxId: sc.id } }), 'sbx_ps');
    found = ps.processes.find((p) => p.command.includes(marker));
    if (!found) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(found, 'the detached sleep is listed');
  assert.equal(found.runId, started.id);
  assert.equal(found.confinement.noNewPrivs, true);
  const refused = await state.client.callTool({ name: 'sbx_kill', arguments: { sandboxId: sc.id, pid: 1 } });
  assert.ok(refused.isError, 'killing pid 1 is a tool error');
  assert.match(errorMessage(refused, 'sbx_kill pid 1'), /pid 1/);
  const killed = structured(await state.client.callTool({
    name: 'sbx_kill', arguments: { sandboxId: sc.id, run: started.id },
  }), 'sbx_kill');
  assert.deepEqual(killed.runs, [started.id]);
  let run;
  for (let i = 0; i < 50; i++) {
    const runs = structured(await state.client.callTool({ name: 'sbx_runs', arguments: { sandboxId: sc.id } }), 'sbx_runs');
    run = runs.runs.find((r) => r.id === started.id);
    if (run?.status === 'done') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(run?.status, 'done', JSON.stringify(run));
  await state.client.callTool({ name: 'sbx_delete', arguments: { sandboxId: sc.id } });
});

test('sbx_write, sbx_ls, sbx_read, sbx_mkdir, sbx_rm: text and binary round-trip; escapes refused', async () => {
  const sc = structured(await state.client.callTool({ name: 'sbx_create', arguments: { name: 'e2e-files' } }), 'sbx_create');
  const call = (name, args) => state.client.callTool({ name, arguments: { sandboxId: sc.id, ...args } });
  const w = structured(await call('sbx_write', { path: 'notes/a.txt', content: 'héllo\n', parents: true }), 'sbx_write text');
  assert.equal(w.type, 'file');
  assert.equal(w.size, Buffer.byteLength('héllo\n'));
  const bytes = Buffer.from([0, 1, 2, 255, 254, 0, 10]);
  structured(await call('sbx_write', { path: 'notes/b.bin', content: bytes.toString('base64'), encoding: 'base64' }), 'sbx_write base64');
  const ls = structured(await call('sbx_ls', { path: 'notes' }), 'sbx_ls');
  assert.deepEqual(ls.entries.map((e) => e.name).sort(), ['a.txt', 'b.bin']);
  const t = structured(await call('sbx_read', { path: 'notes/a.txt' }), 'sbx_read text');
  assert.equal(t.encoding, 'text');
  assert.equal(t.content, 'héllo\n');
  const b = structured(await call('sbx_read', { path: 'notes/b.bin' }), 'sbx_read binary');
  assert.equal(b.encoding, 'base64');
  assert.deepEqual(Buffer.from(b.content, 'base64'), bytes);
  const part = structured(await call('sbx_read', { path: 'notes/a.txt', offset: 1, length: 2, encoding: 'base64' }), 'sbx_read part');
  assert.deepEqual(Buffer.from(part.content, 'base64'), Buffer.from('héllo\n').subarray(1, 3));
  const run = structured(await call('sbx_run', { code: 'od -An -tu1 notes/b.bin | tr -s " " | sed "s/^ //"' }), 'sbx_run');
  assert.equal(run.stdout.trim(), '0 1 2 255 254 0 10');
  for (const path of ['../x', '/etc/passwd', 'notes/../../etc/passwd']) {
    const res = await call('sbx_read', { path });
    assert.ok(res.isError, `sbx_read ${path} must fail`);
  }
  structured(await call('sbx_mkdir', { path: 'x/y', parents: true }), 'sbx_mkdir');
  const rm = structured(await call('sbx_rm', { path: 'notes', recursive: true }), 'sbx_rm');
  assert.equal(rm.deleted, true);
  const gone = await call('sbx_ls', { path: 'notes' });
  assert.ok(gone.isError);
  assert.match(errorMessage(gone, 'sbx_ls gone'), /no such file/);
  await state.client.callTool({ name: 'sbx_delete', arguments: { sandboxId: sc.id } });
});

test('sbx_trace: a traced python run reports its write and spawn, by run and in the result', async () => {
  const sc = structured(await state.client.callTool({ name: 'sbx_create', arguments: { name: 'e2e-trace', tracing: true } }), 'sbx_create');
  const run = structured(await state.client.callTool({
    name: 'sbx_run',
    arguments: { sandboxId: sc.id, language: 'python', code: "import subprocess\nopen('t.txt','w').write('x')\nsubprocess.run(['true'])\n" },
  }), 'sbx_run traced');
  assert.ok(run.trace.some((e) => e.kind === 'write' && e.path.endsWith('/t.txt')), JSON.stringify(run.trace));
  const tr = structured(await state.client.callTool({ name: 'sbx_trace', arguments: { sandboxId: sc.id, run: run.id } }), 'sbx_trace');
  assert.equal(tr.tracing, true);
  assert.ok(tr.events.some((e) => e.kind === 'spawn' && e.argv[0] === 'true'), JSON.stringify(tr.events));
  assert.ok(tr.events.every((e) => e.run === run.id));
  const bad = await state.client.callTool({ name: 'sbx_trace', arguments: { sandboxId: sc.id, since: 'yesterday' } });
  assert.ok(bad.isError);
  await state.client.callTool({ name: 'sbx_delete', arguments: { sandboxId: sc.id } });
});

test('sbx_run_get, sbx_profile, sbx_mounts, sbx_health: the read-only routes have MCP twins', async () => {
  const sc = structured(await state.client.callTool({ name: 'sbx_create', arguments: { name: 'e2e-read' } }), 'sbx_create');
  const run = structured(await state.client.callTool({ name: 'sbx_run', arguments: { sandboxId: sc.id, code: 'echo again' } }), 'sbx_run');
  const got = structured(await state.client.callTool({ name: 'sbx_run_get', arguments: { sandboxId: sc.id, runId: run.id } }), 'sbx_run_get');
  assert.equal(got.stdout, 'again\n');
  assert.equal(got.status, 'done');
  const prof = structured(await state.client.callTool({ name: 'sbx_profile', arguments: { sandboxId: sc.id } }), 'sbx_profile');
  assert.ok(prof.argv.includes('--unshare-pid'), JSON.stringify(prof.argv));
  const m = structured(await state.client.callTool({ name: 'sbx_mounts', arguments: { sandboxId: sc.id } }), 'sbx_mounts');
  assert.deepEqual(m.mounts, []);
  const h = structured(await state.client.callTool({ name: 'sbx_health', arguments: {} }), 'sbx_health');
  assert.equal(h.status, 'ok');
  const missing = await state.client.callTool({ name: 'sbx_run_get', arguments: { sandboxId: sc.id, runId: 'run_000000000000' } });
  assert.ok(missing.isError);
  await state.client.callTool({ name: 'sbx_delete', arguments: { sandboxId: sc.id } });
});

test('sbx_run with a progressToken streams the output before the program ends', async () => {
  const created = structured(await state.client.callTool({ name: 'sbx_create', arguments: { name: 'e2e-stream' } }), 'sbx_create');
  assert.equal(typeof created.workdir, 'string');
  // The program waits for a file that is created only once the first progress
  // notification has arrived: output that came whole at the end would never come.
  const progress = [];
  let released = false;
  const res = await state.client.callTool(
    {
      name: 'sbx_run',
      arguments: {
        sandboxId: created.id,
        language: 'sh',
        timeoutMs: 20000,
        code: 'echo first; while [ ! -e go ]; do sleep 0.05; done; echo second',
      },
    },
    undefined,
    {
      timeout: 30000,
      onprogress: (p) => {
        progress.push(p);
        if (!released && /first/.test(p.message ?? '')) {
          released = true;
          writeFileSync(join(created.workdir, 'go'), '');
        }
      },
    },
  );
  const sc = structured(res, 'sbx_run');
  assert.ok(released, `no progress with the first line before the result: ${JSON.stringify(progress)}`);
  assert.equal(sc.stdout, 'first\nsecond\n');
  assert.equal(sc.exitCode, 0);
  assert.ok(progress.length >= 2, `progress: ${JSON.stringify(progress)}`);
  for (let i = 1; i < progress.length; i++)
    assert.ok(progress[i].progress > progress[i - 1].progress, 'progress must increase');
  assert.equal(progress.map((p) => p.message).join(''), 'first\nsecond\n');
  await state.client.callTool({ name: 'sbx_delete', arguments: { sandboxId: created.id } });
});

test('sbx_run on a bogus sandbox is a tool error', async () => {
  const res = await state.client.callTool({
    name: 'sbx_run',
    arguments: { sandboxId: 'sbx_doesnotexist', language: 'sh', code: 'echo no' },
  });
  assert.equal(res.isError, true, `expected isError: ${JSON.stringify(res)}`);
  assert.ok(!JSON.stringify(res).includes('no\\n'), 'it ran anyway');
});

test('an unknown tool is refused', async () => {
  let refused = false;
  try {
    const res = await state.client.callTool({ name: 'sbx_set_policy', arguments: {} });
    refused = res.isError === true;
  } catch {
    refused = true; // a JSON-RPC error is also a refusal
  }
  assert.ok(refused, 'an unknown tool was accepted');
});

// sbxctl mcp: the stdio bridge for clients that spawn their servers. The SDK starts it as
// a child process and speaks newline-delimited JSON-RPC on its stdin and stdout.
test('sbxctl mcp: the SDK over stdio drives sbx_apps and sbx_run', async () => {
  const bin = process.env.SBX_BIN_DIR;
  assert.ok(bin, 'SBX_BIN_DIR is not set');
  const base = url.replace(/\/mcp$/, '');
  // an app to drive, made over REST (sbx_apps manages, it does not create)
  const made = await fetch(`${base}/api/sandbox/apps`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'e2e-app', startsecs: 0, command: 'echo started-by-stdio; exec sleep 600' }),
  });
  assert.equal(made.status, 201, await made.text());
  const transport = new StdioClientTransport({
    command: join(bin, 'sbxctl'),
    args: ['mcp'],
    env: { PATH: process.env.PATH, SBX_URL: base, SBX_TOKEN: token },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'sbx-e2e-stdio', version: '0.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'sbx_apps'), 'no sbx_apps over stdio');
    let s = structured(await client.callTool({ name: 'sbx_apps', arguments: {} }), 'sbx_apps list');
    assert.ok(s.apps.some((a) => a.name === 'e2e-app' && a.state === 'STOPPED'), JSON.stringify(s));
    s = structured(await client.callTool({ name: 'sbx_apps', arguments: { action: 'start', name: 'e2e-app' } }), 'start');
    assert.ok(['STARTING', 'RUNNING'].includes(s.state), JSON.stringify(s));
    // RUNNING, and confinement read once the jail has reported its first process
    for (let i = 0; i < 100 && (s.state !== 'RUNNING' || s.confined === null); i++) {
      await new Promise((r) => setTimeout(r, 100));
      s = structured(await client.callTool({ name: 'sbx_apps', arguments: { action: 'status', name: 'e2e-app' } }), 'status');
    }
    assert.equal(s.state, 'RUNNING', JSON.stringify(s));
    assert.equal(s.confined, true, JSON.stringify(s));
    let log = '';
    for (let i = 0; i < 50 && !log.includes('started-by-stdio'); i++) {
      log = structured(await client.callTool({ name: 'sbx_apps', arguments: { action: 'log', name: 'e2e-app' } }), 'log').text;
      if (!log.includes('started-by-stdio')) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(log.includes('started-by-stdio'), `log: ${log}`);
    s = structured(await client.callTool({ name: 'sbx_apps', arguments: { action: 'stop', name: 'e2e-app' } }), 'stop');
    assert.ok(['STOPPING', 'STOPPED'].includes(s.state), JSON.stringify(s));
    const bad = await client.callTool({ name: 'sbx_apps', arguments: { action: 'explode', name: 'e2e-app' } });
    assert.equal(bad.isError, true, 'an unknown action was accepted');
    // a plain run through the same bridge
    const sc = structured(await client.callTool({ name: 'sbx_create', arguments: { name: 'e2e-stdio' } }), 'sbx_create');
    const run = structured(await client.callTool({ name: 'sbx_run', arguments: { sandboxId: sc.id, language: 'sh', code: 'echo via-stdio' } }), 'sbx_run');
    assert.equal(run.stdout, 'via-stdio\n');
    assert.equal(run.isolation, 'bwrap');
  } finally {
    await client.close();
  }
});

test('DELETE ends the session', async () => {
  await state.transport.terminateSession();
  await state.client.close();
  state.client = null;
});

test('a client without the token is refused', async () => {
  const { client, transport } = connectClient({});
  await assert.rejects(client.connect(transport), is401);
  await client.close().catch(() => {});
});

test('a client with a wrong token is refused', async () => {
  const { client, transport } = connectClient({ Authorization: 'Bearer wrong-token' });
  await assert.rejects(client.connect(transport), is401);
  await client.close().catch(() => {});
});

let passed = 0;
let failed = 0;
for (const t of tests) {
  let timer;
  try {
    await Promise.race([
      t.fn(),
      new Promise((_, rej) => {
        timer = setTimeout(() => rej(new Error(`timed out after ${TEST_TIMEOUT_MS} ms`)), TEST_TIMEOUT_MS);
      }),
    ]);
    passed++;
    console.log(`ok   - ${t.name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL - ${t.name}: ${e?.stack || e}`);
  } finally {
    clearTimeout(timer);
  }
}
if (state.client) await state.client.close().catch(() => {});
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
