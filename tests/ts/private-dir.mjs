// State dirs for the servers the TypeScript suites start.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A fresh 0700 state dir under ~/.local/state/agentty-tests: a confining server refuses one in a
 * temp dir such as /tmp, where its commands could write what it trusts later.
 */
export function privateDir() {
  const root = path.join(os.homedir(), '.local', 'state', 'agentty-tests');
  fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  return fs.mkdtempSync(path.join(root, 'ts-'));
}
