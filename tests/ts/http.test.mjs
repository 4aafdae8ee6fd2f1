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

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.AGENTTY_BIN ?? path.resolve(HERE, '../../target/debug/agentty');

/** Starts `serve --http` on a free port; resolves { url, token, stop }. */
async function httpServer() {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'agentty-ts-ws-'));
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'agentty-ts-state-'));
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
  const stop = () =>
    new Promise((resolve) => {
      child.on('exit', resolve);
      child.kill('SIGTERM');
    });
  return { url, token, stop };
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
    const bg = await client.callTool({
      name: 'terminal',
      arguments: { command: 'sleep 30', background: true },
    });
    assert.equal(bg.structuredContent.status, 'background');
    const listed = await client.callTool({ name: 'task_list', arguments: {} });
    assert.equal(listed.structuredContent.jobs.length, 1);
    await transport.terminateSession();
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
