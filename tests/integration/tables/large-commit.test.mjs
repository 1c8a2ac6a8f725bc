// A commit whose metadata file is large (64 KiB and more) sends its pointer move to
// PostgreSQL before the file is written, and writes the file while the UPDATE runs
// (catalog/commit.c, move_ahead); the COMMIT that makes the move visible still comes
// after the file and its name are durable. Checked here: such commits, with an
// Idempotency-Key or without, land once, with a file that holds what the pointer names;
// a file that cannot be written rolls the move back (5xx, nothing applied, and a retry
// applies once); and, read off the daemon's system calls (strace -f -y), the UPDATE is
// sent before the file is synced, and the file's bytes, its name and its directory are
// synced before the COMMIT is sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { psql } from '../lib/harness.mjs';
import { startCatalog, call, tablePath, createBody, appendCommit, uuidv7, localPath } from './lib.mjs';
import { haveStrace, traceProcess } from '../lib/strace.mjs';

const NS = ['big'];
// ~100 KB of properties: above the 64 KiB from which the move is sent ahead.
const properties = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p.${i}`, String(i % 10).repeat(1000)]));
let c;

before(async () => {
  // LeakSanitizer cannot run under ptrace (the suite also runs an ASan build).
  c = await startCatalog('tbl_large_commit', { env: { ASAN_OPTIONS: [process.env.ASAN_OPTIONS, 'detect_leaks=0'].filter(Boolean).join(':') } });
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

async function create(name) {
  const res = await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody(name, { properties }), expect: 200 });
  assert.ok(fs.readFileSync(localPath(res.json['metadata-location'])).length > 64 * 1024, 'the metadata file is large');
  return res.json.metadata;
}

const row = (name) => psql(c.dbUrl, `SELECT version || ' ' || metadata_location FROM table_entry WHERE name = '${name}'`).split(' ');

test('large commits, with and without an Idempotency-Key, land once, and the pointer names a file that holds them', async () => {
  let meta = await create('l1');
  const p = tablePath(c.p, NS, 'l1');
  for (const headers of [{}, { 'Idempotency-Key': uuidv7() }, {}, { 'Idempotency-Key': uuidv7() }]) {
    const [v0] = row('l1');
    const { body, snapshotId } = appendCommit(meta, { ns: NS, name: 'l1' });
    const res = await call(c.base, 'POST', p, { body, headers, expect: 200 });
    const [v1, loc] = row('l1');
    assert.equal(Number(v1), Number(v0) + 1, 'one version more');
    assert.equal(loc, res.json['metadata-location']);
    const file = JSON.parse(fs.readFileSync(localPath(loc), 'utf8'));
    assert.equal(file['current-snapshot-id'], snapshotId, 'the file holds the commit');
    assert.deepEqual(file, res.json.metadata, 'the answer is the file');
    meta = res.json.metadata;
  }
  // a stale commit is still a 409 that applies nothing
  const { body } = appendCommit({ ...meta, 'current-snapshot-id': 42 }, { ns: NS, name: 'l1' });
  const [v0] = row('l1');
  await call(c.base, 'POST', p, { body, expect: 409 });
  assert.equal(row('l1')[0], v0);
});

test('a large commit whose file cannot be written rolls its move back: 5xx, nothing applied, the retry applies once', async () => {
  for (const keyed of [false, true]) {
    const name = keyed ? 'lf_keyed' : 'lf';
    const meta = await create(name);
    const p = tablePath(c.p, NS, name);
    const dir = path.dirname(localPath(meta.location + '/metadata/x'));
    const saved = `${dir}.saved`;
    const [v0, loc0] = row(name);
    const { body } = appendCommit(meta, { ns: NS, name });
    const headers = keyed ? { 'Idempotency-Key': uuidv7() } : {};
    fs.renameSync(dir, saved);
    fs.writeFileSync(dir, 'not a directory');
    let first;
    try {
      first = await call(c.base, 'POST', p, { body, headers });
    } finally {
      fs.rmSync(dir);
      fs.renameSync(saved, dir);
    }
    assert.ok(first.status >= 500, `the broken write must be a 5xx, got ${first.status} ${first.text}`);
    assert.deepEqual(row(name), [v0, loc0], 'the pointer did not move');
    assert.equal((await call(c.base, 'GET', p, { expect: 200 })).json['metadata-location'], loc0, 'and a load says so');
    const again = await call(c.base, 'POST', p, { body, headers, expect: 200 });
    assert.equal(Number(row(name)[0]), Number(v0) + 1, 'the retry applied once');
    assert.equal(again.headers['idempotent-replayed'], undefined, 'executed, not replayed');
  }
});

test('a large commit sends its move before the file is synced, and its COMMIT only after the file, its name and its directory are', { skip: !haveStrace && 'strace is not installed' }, async () => {
  const meta = await create('ls');
  const p = tablePath(c.p, NS, 'ls');
  const metaDir = path.dirname(localPath(meta.location + '/metadata/x'));
  const st = await traceProcess(c.floe.proc.pid, {
    calls: 'openat,fsync,fdatasync,linkat,sendto,recvfrom',
    poke: () => call(c.base, 'GET', '/v1/config?warehouse=default', { expect: 200 }),
  });
  try {
    const { body } = appendCommit(meta, { ns: NS, name: 'ls' });
    const res = await call(c.base, 'POST', p, { body, expect: 200 });
    const name = path.basename(localPath(res.json['metadata-location']));
    const calls = await st.stop();
    const on = (re) => calls.filter((x) => x.call === 'sendto' && re.test(x.args));
    // The move's parameters carry the new file's name (a prepared statement's Bind message).
    const update = calls.filter((x) => x.call === 'sendto' && x.args.includes(name));
    const link = calls.find((x) => x.call === 'linkat' && x.ret === '0' && x.args.includes(`"${name}"`));
    assert.ok(link, `the file ${name} was not linked:\n${calls.map((x) => `${x.call}(${x.args.slice(0, 100)})`).join('\n')}`);
    const fd = Number(/"\/proc\/self\/fd\/(\d+)"/.exec(link.args)?.[1]);
    const early = calls.find((x) => x.call === 'fsync' && x.pid === link.pid && x.args.startsWith(`${fd}<`) && x.end < link.start);
    const bytes = calls.find((x) => x.call === 'fsync' && x.ret === '0' && x.pid === link.pid && x.args.startsWith(`${fd}<`) && x.start > link.end);
    const dirSync = calls.find((x) => x.call === 'fsync' && x.ret === '0' && x.args.endsWith(`<${metaDir}>`) && x.start > link.end);
    const commit = on(/COMMIT/).find((x) => x.start > link.end);
    assert.ok(!early, `${name} was synced before it was linked (its inode would reach the disk with no links)`);
    assert.ok(bytes, `${name} was not synced after it was linked`);
    assert.ok(dirSync, `${metaDir} was not synced after ${name} was linked`);
    assert.ok(commit, 'no COMMIT after the link');
    assert.ok(bytes.end < commit.start, `${name} was synced after the COMMIT was sent`);
    assert.ok(dirSync.end < commit.start, 'the directory was synced only after the COMMIT was sent');
    const moveSent = update.find((x) => x.pid === link.pid && x.end < bytes.start);
    assert.ok(moveSent, `the move was not sent before the file was synced: ${update.map((x) => x.args.slice(0, 60)).join(' | ')}`);
    // Its BEGIN rides in front of it: nothing is read from PostgreSQL in between.
    const before = calls.slice(0, calls.indexOf(moveSent) + 1).reverse();
    const begin = before.find((x) => x.call === 'sendto' && x.pid === link.pid && x.args.includes('BEGIN'));
    assert.ok(begin, 'no BEGIN was sent before the move');
    const read = calls.find((x) => x.call === 'recvfrom' && x.pid === link.pid && x.start > begin.end && x.end < moveSent.start);
    assert.ok(!read, `the move's BEGIN took a round trip of its own: ${read?.args.slice(0, 80)}`);
  } finally {
    st.kill();
  }
});
