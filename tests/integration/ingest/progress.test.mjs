// `floe ingest` output for people: the JSON line's `seconds` has millisecond
// precision (not 0.021937677999999999); a run on a terminal that lasts over a
// second draws a progress line on standard error (bytes read of total, rows,
// rows/s, elapsed) and ends it before the JSON line; standard error that is
// not a terminal, or --quiet, gets no progress at all.
//
// The second is FLOE_TEST_PROGRESS_AFTER_MS (a test hook) in the runs that
// must draw, or would draw but for a pipe or --quiet: 0, so that 50,000 rows
// stand for a long run on any build.  A quick run on a terminal, without the
// hook, shows that the second is there.  The terminal runs go through
// util-linux `script`, which gives floe a pseudo-terminal.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startCatalog, createTable, ingest, show, tmpDir } from './lib.mjs';
import { floeBin } from '../lib/harness.mjs';

let ctx;
let dir;
before(async () => {
  ctx = await startCatalog('ingest_progress');
  dir = tmpDir('ingest-progress');
  await createTable(ctx, 'events', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'msg', type: 'string', required: false },
  ]);
});
after(async () => {
  await ctx?.floe.stop();
});

// A CSV of `rows` rows; `salt` makes its content (and so its batch) unique.
let files = 0;
function csvFile(rows, salt) {
  const file = path.join(dir, `events-${++files}.csv`);
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, 'id,msg\n');
  for (let start = 0; start < rows; start += 100000) {
    const lines = [];
    for (let i = start; i < Math.min(rows, start + 100000); i++) lines.push(`${i},${salt} row number ${i} of the progress test`);
    fs.writeSync(fd, `${lines.join('\n')}\n`);
  }
  fs.closeSync(fd);
  return file;
}

// `floe ingest` on a pseudo-terminal: resolves {code, text} (stdout and stderr
// together, as the terminal shows them).
function ingestOnTerminal(file, extra = [], extraEnv = {}) {
  const argv = [floeBin, 'ingest', '--table', 'ns.events', '--database-url', ctx.dbUrl, '--log-level', 'error', ...extra, file];
  const quoted = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FLOE_')) env[k] = v;
  Object.assign(env, extraEnv);
  const proc = spawn('script', ['-qec', quoted, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  proc.stdout.on('data', (d) => { text += d; });
  proc.stderr.on('data', (d) => { text += d; });
  return new Promise((resolve, reject) => {
    proc.on('error', reject);
    proc.on('close', (code) => resolve({ code, text, cmd: quoted }));
  });
}
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

const SECONDS = /"seconds":(\d+(?:\.\d{1,3})?)[,}]/;
const PROGRESS = /\rfloe ingest: read [\d.]+ (?:B|KiB|MiB|GiB) of [\d.]+ (?:B|KiB|MiB|GiB) \(\d+%\), \d+ rows, \d+ rows\/s, [\d.]+ s/;

test('the JSON line prints seconds with millisecond precision', async () => {
  const r = await ingest(ctx, 'events', [csvFile(3, 'small')]);
  assert.equal(r.code, 0, show(r));
  const m = SECONDS.exec(r.stdout);
  assert.ok(m, `seconds is a number with at most 3 decimals: ${r.stdout}`);
  assert.equal(Number(m[1]), r.out.seconds);
  assert.ok(r.out.seconds >= 0 && r.out.seconds < 60, show(r));
  assert.equal(r.stderr, '', 'a quick run prints nothing on standard error');
});

const AT_ONCE = { FLOE_TEST_PROGRESS_AFTER_MS: '0' };
const ROWS = 50000;

test('a run prints no progress when standard error is not a terminal, even when due at once', async () => {
  const r = await ingest(ctx, 'events', [csvFile(ROWS, 'pipe')], { env: AT_ONCE });
  assert.equal(r.code, 0, show(r));
  assert.equal(r.out['rows-committed'], ROWS, show(r));
  assert.equal(r.stderr, '', 'no progress on a pipe');
  assert.doesNotMatch(r.stdout, /floe ingest: read/);
});

test('a quick run on a terminal shows no progress', { skip: !hasScript && 'no util-linux script' }, async () => {
  const r = await ingestOnTerminal(csvFile(3, 'tty-quick'));
  assert.equal(r.code, 0, `${r.cmd}\n${r.text}`);
  const json = JSON.parse(r.text.trim());
  assert.ok(json.seconds < 1, `the run was quick (${json.seconds} s)`);
  assert.doesNotMatch(r.text, /floe ingest: read/);
});

test('a long run on a terminal shows progress on standard error, and --quiet does not', { skip: !hasScript && 'no util-linux script' }, async () => {
  const r = await ingestOnTerminal(csvFile(ROWS, 'tty'), [], AT_ONCE);
  assert.equal(r.code, 0, `${r.cmd}\n${r.text}`);
  assert.match(r.text, PROGRESS, `a progress line: ${JSON.stringify(r.text.slice(0, 600))}`);
  const lines = r.text.split(/\r?\n/);
  const last = lines.filter((l) => l.includes('floe ingest: read')).at(-1);
  const draws = last.split('\r').filter(Boolean);
  assert.ok(draws.length >= 2, `drawn while it ran and at its end: ${JSON.stringify(last)}`);
  assert.doesNotMatch(draws[0], /\(100%\)/, `the first draw is while the run reads: ${draws[0]}`);
  assert.match(draws.at(-1), new RegExp(`\\(100%\\), ${ROWS} rows, `), `the last draw is the final count: ${last}`);
  const json = lines.find((l) => l.startsWith('{'));
  assert.ok(json, `the JSON line is on a line of its own: ${JSON.stringify(r.text.slice(-600))}`);
  assert.equal(JSON.parse(json)['rows-committed'], ROWS);

  const quiet = await ingestOnTerminal(csvFile(ROWS, 'quiet'), ['--quiet'], AT_ONCE);
  assert.equal(quiet.code, 0, `${quiet.cmd}\n${quiet.text}`);
  assert.doesNotMatch(quiet.text, /floe ingest: read/, '--quiet draws no progress');
  assert.equal(JSON.parse(quiet.text.trim())['rows-committed'], ROWS);
});

test('--quiet is in floe ingest --help', () => {
  const r = spawnSync(floeBin, ['ingest', '--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /--quiet\n/);
});
