// `agentty serve --http` with the official MCP TypeScript SDK's Streamable HTTP client (the
// transport Claude Code's `--transport http` uses): a session with the bearer token lists and
// calls tools, validated against their output schemas; one without the token is refused.
//
//   AGENTTY_BIN=target/debug/agentty node --test tests/ts/http.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { privateDir } from './private-dir.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.AGENTTY_BIN ?? path.resolve(HERE, '../../target/debug/agentty');

/** Starts `serve --http` on a free port; resolves { url, token, stop }. */
async function httpServer() {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'agentty-ts-ws-'));
  const state = privateDir();
  const child = spawn(
    BIN,
    ['serve', '--http', '127.0.0.1:0', '--workspace', ws, '--state-dir', state],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const url = await new Promise((resolve, reject) => {
    let seen = '';
    child.stderr.on('data', (chunk) => {
      seen += chunk;
      const m = seen.match(/at (http:\/\/\S+\/mcp)/);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`server exited (${code}): ${seen}`)));
  });
  const token = fs.readFileSync(path.join(state, 'token'), 'utf8').trim();
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise((resolve) => {
        child.on('exit', resolve);
        child.kill('SIGTERM');
      });
    }
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(state, { recursive: true, force: true });
  };
  return { url, token, stop };
}

/** pids of live processes whose command line is exactly `line` (arguments joined by spaces). */
function processesRunning(line) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    let cmd;
    try {
      cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    if (cmd.split('\0').join(' ').trim() === line) found.push(Number(entry));
  }
  return found;
}

test('a Streamable HTTP session with the token lists and calls tools', async () => {
  const server = await httpServer();
  try {
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: `Bearer ${server.token}` } },
    });
    const client = new Client({ name: 'agentty-ts-http', version: '1.0.0' });
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'terminal'));
    const r = await client.callTool({ name: 'terminal', arguments: { command: 'echo over-http' } });
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.stdout, 'over-http\n');
    // A duration no other process uses, so /proc tells this job apart.
    const job = 'sleep 30.4817';
    const bg = await client.callTool({
      name: 'terminal',
      arguments: { command: job, background: true },
    });
    assert.equal(bg.structuredContent.status, 'background');
    const listed = await client.callTool({ name: 'task_list', arguments: {} });
    assert.equal(listed.structuredContent.jobs.length, 1);
    assert.equal(processesRunning(job).length, 1, `${job} is not running`);
    // The SDK's DELETE: the server answers once the session's jobs are stopped.
    await transport.terminateSession();
    assert.deepEqual(processesRunning(job), [], `${job} outlived its session's DELETE`);
    await client.close();
  } finally {
    await server.stop();
  }
});

test('a client without the token is refused before anything runs', async () => {
  const server = await httpServer();
  try {
    const transport = new StreamableHTTPClientTransport(new URL(server.url));
    const client = new Client({ name: 'agentty-ts-http', version: '1.0.0' });
    await assert.rejects(client.connect(transport), (err) => err.code === 401);
  } finally {
    await server.stop();
  }
});
