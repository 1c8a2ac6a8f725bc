// The README's "Try it" block, run from the README text itself against a floe on
// the embedded default (its own PostgreSQL and `file` warehouse under ./.floe,
// the data directory the quickstart serves), as a newcomer pastes it.
//
// Only what the test environment makes necessary is rewritten: the address
// http://127.0.0.1:8181 becomes this floe's (it listens on a free port), the
// quickstart's binary build/server/floe becomes FLOE_BIN, and /tmp/ becomes a
// private directory (so parallel runs do not share files).  The commands run
// one by one, in README order, with bash in a directory whose ./.floe is the
// server's data directory, so `floe ingest` finds the same catalog the same
// way.  A command passes when it exits 0 and every HTTP answer curl received
// in it was 2xx (a `curl() { ... }` wrapper records the statuses, since `curl
// -s` exits 0 on a 404).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startFloe, tmpDir, floeBin } from './lib/harness.mjs';
import { repoRoot } from './lib/paths.mjs';

const README_URL = 'http://127.0.0.1:8181';
const README_BIN = 'build/server/floe';

// The sh block under "## Try it", split into complete commands: lines are joined
// until bash can parse them (a quoted JSON body may span lines without a
// trailing backslash) and the last one does not continue with "\".
export function tryItCommands(readme) {
  const section = /^## Try it\s*$([\s\S]*?)(?=^## )/m.exec(readme);
  assert.ok(section, 'README.md has a "## Try it" section');
  const block = /```sh\n([\s\S]*?)```/.exec(section[1]);
  assert.ok(block, 'the "Try it" section has a ```sh block');
  const commands = [];
  let pending = '';
  for (const line of block[1].split('\n')) {
    if (pending === '' && line.trim() === '') continue;
    pending += (pending ? '\n' : '') + line;
    if (/\\$/.test(line)) continue;
    if (spawnSync('bash', ['-n', '-c', pending]).status === 0) {
      commands.push(pending);
      pending = '';
    }
  }
  assert.equal(pending, '', `the block ends with a complete command: ${pending}`);
  return commands;
}

const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const commands = tryItCommands(readme);

let floe;
let work;
before(async () => {
  work = tmpDir('readme');
  floe = await startFloe({ databaseUrl: null, dataDir: path.join(work, '.floe'), timeoutMs: 120000 });
});
after(async () => {
  await floe?.stop();
});

const CURL_WRAPPER = `curl() {
  local out rc=0
  out=$(command curl -w '\\n%{http_code}' "$@") || rc=$?
  printf '%s\\n' "\${out##*$'\\n'}" >>"$README_HTTP_STATUS"
  printf '%s' "\${out%$'\\n'*}"
  return $rc
}
`;

test('the README "Try it" block parses into its commands', () => {
  assert.ok(commands.length >= 5, `found ${commands.length} commands:\n${commands.join('\n---\n')}`);
  assert.ok(commands.every((c) => !c.includes(README_URL) || c.includes('curl')), 'the address is only used by curl');
  assert.ok(commands.some((c) => c.includes(README_URL)), `the block talks to ${README_URL}`);
});

test('every command of the README "Try it" block works on the embedded default', async () => {
  const outputs = [];
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FLOE_')) env[k] = v;
  const statusFile = path.join(work, 'http-status');
  for (const original of commands) {
    const cmd = original
      .replaceAll(README_URL, floe.baseUrl)
      .replaceAll(README_BIN, floeBin)
      .replaceAll('/tmp/', `${work}/`);
    assert.doesNotMatch(cmd, /:8181\b/, 'no command is left talking to port 8181');
    fs.writeFileSync(statusFile, '');
    const r = spawnSync('bash', ['-c', `${CURL_WRAPPER}${cmd}`], {
      cwd: work,
      env: { ...env, README_HTTP_STATUS: statusFile },
      encoding: 'utf8',
      timeout: 120000,
    });
    const statuses = fs.readFileSync(statusFile, 'utf8').split('\n').filter(Boolean);
    const what = `README command:\n${original}\nran as:\n${cmd}\n-> exit ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}\nHTTP: ${statuses.join(' ')}`;
    assert.equal(r.status, 0, what);
    const curls = (original.match(/(^|[\s|;&(])curl\s/g) || []).length;
    assert.equal(statuses.length, curls, `every curl got an answer\n${what}`);
    for (const s of statuses) assert.match(s, /^2\d\d$/, `HTTP ${s}\n${what}`);
    outputs.push({ original, stdout: r.stdout });
  }

  // What the block shows a newcomer is what it says it shows.
  const ingest = outputs.find((o) => o.original.includes(`${README_BIN} ingest`));
  assert.ok(ingest, 'the block runs floe ingest');
  const line = JSON.parse(ingest.stdout.trim().split('\n').at(-1));
  assert.equal(line.status, 'committed', ingest.stdout);
  assert.ok(line['rows-committed'] > 0, ingest.stdout);
  const metrics = outputs.find((o) => o.original.includes('/metrics'));
  assert.ok(metrics, 'the block reads /metrics');
  assert.match(metrics.stdout, /floe_table_records\{[^}]*\} [1-9]/, metrics.stdout);
});
