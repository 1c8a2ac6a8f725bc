// `floe ingest` output for people: the JSON line's `seconds` has millisecond
// precision (not 0.021937677999999999); a long run on a terminal draws a
// progress line on standard error (bytes read of total, rows, rows/s,
// elapsed) and ends it before the JSON line; standard error that is not a
// terminal, or --quiet, gets no progress at all.
//
// "Long" is more than a second: the input is grown until one run takes over
// two seconds on this machine (a faster machine gets a bigger file), so the
// silence checks run where a terminal would have shown progress.  The terminal
// runs go through util-linux `script`, which gives floe a pseudo-terminal.
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
function ingestOnTerminal(file, extra = []) {
  const argv = [floeBin, 'ingest', '--table', 'ns.events', '--database-url', ctx.dbUrl, '--log-level', 'error', ...extra, file];
  const quoted = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FLOE_')) env[k] = v;
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

let longRows = 0; // rows that take over two seconds here, found by the silence test

test('a long run prints no progress when standard error is not a terminal', async () => {
  let rows = 400000;
  for (let round = 1; ; round++) {
    const file = csvFile(rows, `pipe${round}`);
    const r = await ingest(ctx, 'events', [file]);
    fs.rmSync(file);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out['rows-committed'], rows, show(r));
    assert.equal(r.stderr, '', `no progress on a pipe (${r.out.seconds} s run)`);
    assert.doesNotMatch(r.stdout, /floe ingest: read/);
    if (r.out.seconds >= 2) {
      longRows = rows;
      return;
    }
    assert.ok(round < 4, `ingest of ${rows} rows still took only ${r.out.seconds} s`);
    rows = Math.ceil(rows * Math.min(8, 2.5 / Math.max(r.out.seconds, 0.3)));
  }
});

test('a long run on a terminal shows progress on standard error, and --quiet does not', { skip: !hasScript && 'no util-linux script' }, async () => {
  assert.ok(longRows > 0, 'the previous test found a long enough input');
  // Progress shows after one second; on a shared machine the same input can run twice as
  // fast as it did a moment ago, so a run that came out shorter is repeated on more rows.
  let r;
  for (let round = 0; ; round++, longRows *= 2) {
    const file = csvFile(longRows, `tty${round}`);
    r = await ingestOnTerminal(file);
    fs.rmSync(file);
    assert.equal(r.code, 0, `${r.cmd}\n${r.text}`);
    const json = r.text.split(/\r?\n/).find((l) => l.startsWith('{'));
    if (PROGRESS.test(r.text) || !json || JSON.parse(json).seconds >= 1.5) break;
    assert.ok(round < 3, `the terminal run was long too (${longRows} rows)`);
  }
  assert.match(r.text, PROGRESS, `a progress line: ${JSON.stringify(r.text.slice(0, 600))}`);
  const lines = r.text.split(/\r?\n/);
  const last = lines.filter((l) => l.includes('floe ingest: read')).at(-1);
  const draws = last.split('\r').filter(Boolean);
  assert.match(draws.at(-1), new RegExp(`\\(100%\\), ${longRows} rows, `), `the last draw is the final count: ${last}`);
  const json = lines.find((l) => l.startsWith('{'));
  assert.ok(json, `the JSON line is on a line of its own: ${JSON.stringify(r.text.slice(-600))}`);
  assert.equal(JSON.parse(json)['rows-committed'], longRows);

  // The quiet run must last past the one second after which progress would show; the
  // machine's speed varies, so a run that came out shorter is repeated on more rows.
  for (let round = 0, rows = longRows; ; round++, rows *= 2) {
    const quiet = await ingestOnTerminal(csvFile(rows, `quiet${round}`), ['--quiet']);
    assert.equal(quiet.code, 0, `${quiet.cmd}\n${quiet.text}`);
    assert.doesNotMatch(quiet.text, /floe ingest: read/, '--quiet draws no progress');
    if (JSON.parse(quiet.text.trim().split(/\r?\n/).at(-1)).seconds >= 1) break;
    assert.ok(round < 3, `the quiet run was long too (${rows} rows)`);
  }
});

test('--quiet is in floe ingest --help', () => {
  const r = spawnSync(floeBin, ['ingest', '--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /--quiet\n/);
});
