// End-to-end tests with the official MCP TypeScript SDK (@modelcontextprotocol/sdk): a third,
// independent client implementation, after rmcp (the Rust suites) and the Python SDK.
//
// The agentty binary comes from $AGENTTY_BIN (scripts/test builds it and sets it). Run with
//   AGENTTY_BIN=target/debug/agentty node --test tests/ts/*.test.mjs
//
// What the SDK does that these tests rely on (read in node_modules/@modelcontextprotocol/sdk,
// dist/esm/client/index.js):
// - listTools() compiles one validator per tool outputSchema (cacheToolMetadata) with its
//   AjvJsonSchemaValidator (Ajv draft-07 class, strict: false, ajv-formats added). Ajv logs
//   unknown formats through console.warn at that moment, not at call time.
// - callTool() validates structuredContent with that cached validator and throws McpError on a
//   mismatch, but only for tools seen by an earlier listTools(): without one, nothing is
//   validated. So every session here lists the tools first, checks that the SDK did cache a
//   validator per tool, and also validates explicitly with a separate AjvJsonSchemaValidator.
// - A JSON-RPC error answer makes callTool() throw McpError (code and message of the answer).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import util from 'node:util';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { privateDir } from './private-dir.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.AGENTTY_BIN ?? path.resolve(HERE, '../../target/debug/agentty');
if (!fs.existsSync(BIN)) {
  throw new Error(`agentty binary not found at ${BIN}: build it or set AGENTTY_BIN`);
}

const TOOLS = [
  'terminal',
  'task_list',
  'task_output',
  'task_stop',
  'task_wait',
  'shell_open',
  'shell_send',
  'shell_read',
  'shell_list',
  'shell_close',
];

// Hang guards only: nothing here should come near them.
const REQUEST = { timeout: 60_000 };
const TEST = { timeout: 180_000 };
const EXIT_GUARD_MS = 30_000;
const LEFTOVER_GUARD_MS = 15_000;

// ---------------------------------------------------------------------------------------------
// Processes. Every process a command of agentty starts carries AGENTTY_RUN=<session>-<n>, and
// the session is "<unix seconds>-<pid of the process the client spawned>" (crates/agentty
// main.rs: session_id() runs before the watchdog fork). scripts/test compares the marked
// processes before and after; here we also know which markers are ours.

/** pid -> AGENTTY_RUN value of every live process that carries one. */
function markedProcesses() {
  const found = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let env;
    try {
      env = fs.readFileSync(`/proc/${entry}/environ`, 'latin1');
    } catch {
      continue; // gone, or not ours to read
    }
    const marker = env.split('\0').find((v) => v.startsWith('AGENTTY_RUN='));
    if (marker !== undefined) found.set(Number(entry), marker.slice('AGENTTY_RUN='.length));
  }
  return found;
}

function cmdline(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
  } catch {
    return '(gone)';
  }
}

const BEFORE = markedProcesses();
/** pids of the servers this file started (the processes the SDK spawned). */
const serverPids = [];

function isOurs(marker) {
  return serverPids.some((pid) => new RegExp(`^\\d+-${pid}-`).test(marker));
}

/** Marked processes that were not there when this file started, split into ours and others. */
function newMarkedProcesses() {
  const ours = [];
  const others = [];
  for (const [pid, marker] of markedProcesses()) {
    if (BEFORE.has(pid)) continue;
    (isOurs(marker) ? ours : others).push({ pid, marker, cmd: cmdline(pid) });
  }
  return { ours, others };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** A hang guard: resolves to null after `ms`, without keeping the process alive meanwhile. */
const guard = (ms) => new Promise((resolve) => setTimeout(resolve, ms, null).unref());

// ---------------------------------------------------------------------------------------------
// Console capture: whatever the SDK (and the Ajv it bundles) prints while `fn` runs.

async function capturingOutput(fn) {
  const lines = [];
  const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'];
  const saved = Object.fromEntries(methods.map((m) => [m, console[m]]));
  const savedWrite = process.stderr.write;
  const onWarning = (w) => lines.push(`process warning: ${w.name}: ${w.message}`);
  for (const m of methods) {
    console[m] = (...args) => lines.push(`console.${m}: ${util.format(...args)}`);
  }
  process.stderr.write = function (chunk, encoding, callback) {
    lines.push(`process.stderr: ${String(chunk).trimEnd()}`);
    const cb = typeof encoding === 'function' ? encoding : callback;
    if (typeof cb === 'function') cb();
    return true;
  };
  process.on('warning', onWarning);
  try {
    const value = await fn();
    return { value, lines };
  } finally {
    process.off('warning', onWarning);
    process.stderr.write = savedWrite;
    Object.assign(console, saved);
  }
}

// ---------------------------------------------------------------------------------------------
// A fresh server in a fresh workspace and state directory, closed (and checked) at the end.

async function withServer(t, fn) {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'agentty-ts-ws-'));
  const state = privateDir();
  const transport = new StdioClientTransport({
    command: BIN,
    args: ['serve', '--workspace', ws, '--state-dir', state],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const client = new Client({ name: 'agentty-ts-e2e', version: '0.0.0' });
  const transportErrors = [];
  try {
    await client.connect(transport, REQUEST);
  } catch (e) {
    await client.close().catch(() => {});
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(state, { recursive: true, force: true });
    throw new Error(`cannot start and initialize ${BIN}: ${e?.message}\nstderr:\n${stderr}`, { cause: e });
  }
  client.onerror = (e) => transportErrors.push(String(e?.stack ?? e));
  // The transport forgets its child on close(); keep it to see how (and whether) it ended.
  const child = transport._process;
  assert.ok(child, 'the SDK transport exposes no child process');
  const pid = transport.pid;
  serverPids.push(pid);
  const exited = new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
    } else {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    }
  });
  const server = { client, ws, state, pid, stderr: () => stderr };
  let failed = true;
  try {
    const value = await fn(server);
    failed = false;
    return value;
  } finally {
    await client.close();
    const status = await Promise.race([exited, guard(EXIT_GUARD_MS)]);
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(state, { recursive: true, force: true });
    if (status) {
      t.diagnostic(`server pid ${pid} ended: code ${status.code}, signal ${status.signal}`);
    }
    if (failed && stderr) t.diagnostic(`server stderr:\n${stderr}`);
    if (!failed) {
      assert.ok(
        status,
        `server pid ${pid} still running ${EXIT_GUARD_MS} ms after client.close()\nstderr:\n${stderr}`,
      );
      assert.deepEqual(transportErrors, [], `transport errors:\n${transportErrors.join('\n')}`);
    }
  }
}

function text(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('');
}

/**
 * Lists the tools (which makes the SDK compile and cache its output validators) and compiles
 * the explicit ones. Ajv's format warnings are test (a2)'s business; here they are dropped.
 */
async function listAndCompile(client) {
  const { value, lines } = await capturingOutput(async () => {
    const { tools } = await client.listTools(undefined, REQUEST);
    const explicit = new AjvJsonSchemaValidator();
    const validators = new Map(tools.map((tool) => [tool.name, explicit.getValidator(tool.outputSchema)]));
    return { tools, validators };
  });
  for (const tool of value.tools) {
    assert.equal(
      typeof client.getToolOutputValidator(tool.name),
      'function',
      `the SDK cached no output validator for ${tool.name}: callTool would not validate it`,
    );
  }
  // Anything printed that is not a known format warning is surprising: show it.
  const other = lines.filter((l) => !/unknown format ".*" ignored in schema/.test(l));
  assert.deepEqual(other, [], 'unexpected output while compiling the output schemas');
  return value;
}

/** Calls a tool that must succeed; checks isError, the text and the structured result. */
async function callOk(client, validators, name, args) {
  let result;
  try {
    result = await client.callTool({ name, arguments: args }, undefined, REQUEST);
  } catch (e) {
    // The SDK's own outputSchema validation (or a JSON-RPC error) lands here.
    assert.fail(`${name}(${JSON.stringify(args)}) threw ${e?.constructor?.name}: ${e?.message}`);
  }
  const body = text(result);
  assert.equal(result.isError, false, `${name}(${JSON.stringify(args)}) is an error: ${body}`);
  assert.ok(body.length > 0, `${name}: the text content is empty`);
  const sc = result.structuredContent;
  assert.ok(sc && typeof sc === 'object', `${name}: no structuredContent`);
  const check = validators.get(name)(sc);
  assert.ok(
    check.valid,
    `${name}: structuredContent does not match its outputSchema: ${check.errorMessage}\n` +
      `structuredContent: ${JSON.stringify(sc)}`,
  );
  return { result, sc, body };
}

// ---------------------------------------------------------------------------------------------

test('(a1) tools/list: all ten tools, terminal first', TEST, async (t) => {
  await withServer(t, async ({ client }) => {
    // Test (a2) owns what listTools prints; keep it out of this one's output.
    const { value: { tools } } = await capturingOutput(() => client.listTools(undefined, REQUEST));
    const names = tools.map((tool) => tool.name);
    assert.deepEqual([...names].sort(), [...TOOLS].sort(), `listed: ${names.join(', ')}`);
    for (const tool of tools) {
      assert.equal(tool.inputSchema?.type, 'object', `${tool.name}: inputSchema`);
      assert.equal(tool.outputSchema?.type, 'object', `${tool.name}: outputSchema`);
    }
    assert.equal(names[0], 'terminal', `terminal is not listed first; the order is: ${names.join(', ')}`);
  });
});

test('(a2) the SDK prints no warning for our schemas (listTools, callTool)', TEST, async (t) => {
  await withServer(t, async ({ client }) => {
    const { value, lines } = await capturingOutput(async () => {
      const listed = await client.listTools(undefined, REQUEST);
      const called = await client.callTool(
        { name: 'terminal', arguments: { command: 'echo quiet' } },
        undefined,
        REQUEST,
      );
      return { listed, called };
    });
    assert.equal(value.called.isError, false, text(value.called));
    const formats = new Set(
      lines.flatMap((l) => [...l.matchAll(/unknown format "([^"]+)"/g)].map((m) => m[1])),
    );
    assert.equal(
      lines.length,
      0,
      `${lines.length} line(s) printed during listTools/callTool` +
        (formats.size ? ` (unknown formats: ${[...formats].sort().join(', ')})` : '') +
        `; the first ones:\n${lines.slice(0, 5).join('\n')}`,
    );
  });
});

test('(b) every tool answers valid arguments with a result that matches its outputSchema', TEST, async (t) => {
  await withServer(t, async ({ client, pid: serverPid }) => {
    const { validators } = await listAndCompile(client);
    const called = new Set();
    const call = async (name, args) => {
      called.add(name);
      return callOk(client, validators, name, args);
    };

    // terminal, foreground.
    let r = await call('terminal', { command: 'echo hello-from-ts' });
    assert.equal(r.sc.status, 'success', r.body);
    assert.equal(r.sc.exit_code, 0, r.body);
    assert.equal(r.sc.stdout, 'hello-from-ts\n', r.body);

    // terminal, background, and the task_* tools.
    r = await call('terminal', { command: 'echo bg-start; echo bg-done', background: true });
    assert.equal(r.sc.status, 'background', r.body);
    const quick = r.sc.job_id;
    r = await call('terminal', { command: 'echo sleeping; sleep 300', background: true });
    assert.equal(r.sc.status, 'background', r.body);
    const slow = r.sc.job_id;
    assert.ok(quick && slow && quick !== slow, `job ids: ${quick}, ${slow}`);

    r = await call('task_wait', { id: quick, timeout_ms: 30_000 });
    assert.equal(r.sc.ended, true, r.body);
    assert.equal(r.sc.job.exit_code, 0, r.body);

    r = await call('task_output', { id: quick, since: 0 });
    assert.equal(r.sc.text, 'bg-start\nbg-done\n', r.body);

    r = await call('task_list', {});
    const jobs = new Map(r.sc.jobs.map((job) => [job.id, job]));
    assert.ok(jobs.has(quick) && jobs.has(slow), `task_list: ${r.body}`);
    assert.equal(jobs.get(slow).state, 'running', r.body);
    // The leftover scan of test (d) must recognise this server's processes: check it on one.
    const slowPid = jobs.get(slow).pid;
    const marker = markedProcesses().get(slowPid);
    assert.ok(
      marker !== undefined && new RegExp(`^\\d+-${serverPid}-`).test(marker),
      `job ${slow} (pid ${slowPid}) carries AGENTTY_RUN=${marker}, not this server's (pid ${serverPid})`,
    );

    r = await call('task_stop', { id: slow });
    assert.equal(r.sc.was_running, true, r.body);
    assert.notEqual(r.sc.job.state, 'running', r.body);

    // The shell_* tools.
    r = await call('shell_open', {});
    const sid = r.sc.id;
    assert.ok(sid, r.body);
    r = await call('shell_send', { id: sid, input: 'echo hi\n' });
    assert.equal(r.sc.status, 'done', r.body);
    assert.equal(r.sc.output, 'hi\n', r.body);
    const from = r.sc.cursor_from;
    r = await call('shell_read', { id: sid, since: from });
    assert.ok(r.sc.text.includes('hi'), r.body);
    r = await call('shell_list', {});
    assert.ok(
      r.sc.shells.some((s) => s.id === sid),
      `shell_list does not list ${sid}: ${r.body}`,
    );
    r = await call('shell_close', { id: sid });
    assert.equal(r.sc.id, sid, r.body);

    assert.deepEqual([...called].sort(), [...TOOLS].sort(), 'not every tool was called');
  });
});

test('(b2) the output validators reject a wrong structuredContent', TEST, async (t) => {
  // A guard against a vacuous check: a validator that accepts anything proves nothing.
  await withServer(t, async ({ client }) => {
    const { validators } = await listAndCompile(client);
    const { sc } = await callOk(client, validators, 'terminal', { command: 'true' });
    for (const [what, wrong] of [
      ['status 42', { ...sc, status: 42 }],
      ['no exit_code', Object.fromEntries(Object.entries(sc).filter(([k]) => k !== 'exit_code'))],
      ['duration_ms as a string', { ...sc, duration_ms: '12' }],
    ]) {
      assert.equal(validators.get('terminal')(wrong).valid, false, `explicit validator accepts ${what}`);
      assert.equal(
        client.getToolOutputValidator('terminal')(wrong).valid,
        false,
        `the SDK's cached validator accepts ${what}`,
      );
    }
  });
});

test('(c) errors: unknown job, argument of the wrong type; the server keeps answering', TEST, async (t) => {
  await withServer(t, async ({ client }) => {
    const { validators } = await listAndCompile(client);

    const unknown = await client.callTool(
      { name: 'task_output', arguments: { id: 't999' } },
      undefined,
      REQUEST,
    );
    assert.equal(unknown.isError, true, `task_output(t999) is not an error: ${JSON.stringify(unknown)}`);
    assert.match(text(unknown), /t999/, 'the message does not name the unknown job');
    t.diagnostic(`task_output(t999): ${text(unknown)}`);

    // timeout_ms must be an integer. The SDK does not check arguments against inputSchema, so
    // the server sees the string and answers with a tool error that names the field in words.
    const bad = await client.callTool(
      { name: 'terminal', arguments: { command: 'echo x', timeout_ms: '1000' } },
      undefined,
      REQUEST,
    );
    assert.equal(bad.isError, true, `timeout_ms "1000" was accepted: ${JSON.stringify(bad)}`);
    assert.match(
      text(bad),
      /`timeout_ms` must be an integer ≥ 0 \(got the string "1000"\)/,
      'the error does not name the field in words',
    );
    t.diagnostic(`terminal(timeout_ms: "1000") -> ${text(bad)}`);

    const { sc } = await callOk(client, validators, 'terminal', { argv: ['echo', 'alive'] });
    assert.equal(sc.stdout, 'alive\n');
  });
});

test('(d) close() ends the server, and nothing it started is left running', TEST, async (t) => {
  let jobPids = [];
  await withServer(t, async ({ client }) => {
    const { validators } = await listAndCompile(client);
    // Leave work running for the shutdown to stop: a background job and an open shell.
    const { sc } = await callOk(client, validators, 'terminal', { command: 'sleep 300', background: true });
    await callOk(client, validators, 'shell_open', {});
    const { sc: listed } = await callOk(client, validators, 'task_list', {});
    jobPids = listed.jobs.map((job) => job.pid);
    assert.ok(listed.jobs.some((job) => job.id === sc.job_id && job.state === 'running'));
  });
  // withServer asserted that the server process exited. Its stops may take a moment (grace
  // periods): wait for the marked processes of every server of this file to go, up to a guard.
  let left = newMarkedProcesses();
  for (const end = Date.now() + LEFTOVER_GUARD_MS; left.ours.length && Date.now() < end; ) {
    await sleep(100);
    left = newMarkedProcesses();
  }
  if (left.others.length) {
    t.diagnostic(`new marked processes of other runs (not ours): ${JSON.stringify(left.others)}`);
  }
  for (const { pid } of left.ours) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  assert.deepEqual(
    left.ours,
    [],
    `processes of this run left behind (servers ${serverPids.join(', ')}; jobs of the last ${jobPids.join(', ')})`,
  );
});

// ---------------------------------------------------------------------------------------------
// Typed results (docs/BEHAVIOUR.md §8): the SDK validates the parsed result with the tool's
// outputSchema, and the type's own schema, read as a resource, validates its data (JSON Schema
// 2020-12, as MCP uses: Ajv's 2020 class).

test('(p1) parse: true gives a DirectoryListing that its schema resource validates', TEST, async (t) => {
  const { default: Ajv2020 } = await import('ajv/dist/2020.js');
  await withServer(t, async ({ client, ws }) => {
    const { validators } = await listAndCompile(client);
    fs.writeFileSync(path.join(ws, 'notes.txt'), 'x'.repeat(321));
    fs.mkdirSync(path.join(ws, 'src'));
    const { sc, body } = await callOk(client, validators, 'terminal', { command: 'ls -la', parse: true });
    assert.equal(sc.parsed?.type, 'DirectoryListing', body);
    assert.equal(sc.parsed.schema, 'agentty://schema/DirectoryListing');
    const notes = sc.parsed.data.entries.find((e) => e.name === 'notes.txt');
    assert.equal(notes?.size_bytes, 321, JSON.stringify(sc.parsed.data));
    assert.ok(body.split('\n')[1].startsWith('DirectoryListing {'), body);

    const { resources } = await client.listResources(undefined, REQUEST);
    assert.ok(resources.some((r) => r.uri === 'agentty://schema/DirectoryListing'), JSON.stringify(resources));
    const read = await client.readResource({ uri: sc.parsed.schema }, REQUEST);
    const schema = JSON.parse(read.contents[0].text);
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    const validate = ajv.compile(schema);
    assert.ok(validate(sc.parsed.data), JSON.stringify(validate.errors));
  });
});
