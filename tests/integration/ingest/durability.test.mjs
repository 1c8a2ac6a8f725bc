// What `floe ingest` makes durable before it commits, read off the system
// calls it makes (strace -f -y: every file descriptor is printed with its
// path).  The commit must refer only to files whose bytes and names would
// survive a power loss:
// - the data file's bytes are synced (fdatasync) and its directory is synced
//   after the file was created;
// - a manifest and a manifest list are written whole to an unnamed file
//   (O_TMPFILE), linked under their names, and only then synced, so that the
//   sync writes the inode with its link (on a file system without a journal
//   a sync before the link leaves the name pointing at an inode with no
//   links on disk); the metadata directory is synced after the last link;
// - all of that has returned before the commit request starts.
// The syncs are made together (storage/io/pending.c): concurrently, on more
// than one thread, each directory once.  strace sees every thread (-f), and
// an event's place is where its call returned (a sync) or began (the
// commit's send).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startCatalog, createTable, ingest, show, loadTable, currentSnapshot, tmpDir } from './lib.mjs';
import { haveStrace, parseStrace, fdOf } from '../lib/strace.mjs';

let ctx;
let dir;

before(async () => {
  if (!haveStrace) return;
  ctx = await startCatalog('ingest_durability');
  dir = tmpDir('ingest-durability');
  await createTable(ctx, 'd', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 's', type: 'string', required: false },
  ]);
});

after(async () => {
  await ctx?.floe.stop();
});

const syncs = (calls) =>
  calls.filter((c) => (c.call === 'fsync' || c.call === 'fdatasync') && c.ret === '0').map((c) => ({ ...c, ...fdOf(c.args) }));

function csv(name, rows) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `id,s\n${Array.from({ length: rows }, (_, i) => `${i},v${i}`).join('\n')}\n`);
  return file;
}

test('through a catalog, every file the commit refers to is durable, with its name, before the commit is sent', { skip: !haveStrace && 'strace is not installed' }, async () => {
  const trace = path.join(dir, 'rest.strace');
  const r = await ingest(ctx, 'd', [csv('a.csv', 2000)], {
    rest: true,
    // LeakSanitizer cannot run under ptrace (the suite also runs an ASan build).
    env: { ASAN_OPTIONS: [process.env.ASAN_OPTIONS, 'detect_leaks=0'].filter(Boolean).join(':') },
    wrap: ['strace', '-f', '-y', '-qq', '-s', '200', '-o', trace, '-e', 'trace=openat,fsync,fdatasync,linkat,sendmsg,sendto', '--'],
  });
  assert.equal(r.code, 0, show(r));
  assert.equal(r.out.status, 'committed', show(r));
  const calls = parseStrace(fs.readFileSync(trace, 'utf8'));
  const synced = syncs(calls);

  const commit = calls.find((c) => (c.call === 'sendmsg' || c.call === 'sendto') && /POST \/v1\/[^ "]*\/tables\/d /.test(c.args));
  assert.ok(commit, `no commit request in the trace:\n${calls.map((c) => `${c.call}(${c.args.slice(0, 120)})`).join('\n')}`);

  // The data file: created in data/, its bytes and its name synced before the commit.
  const created = calls.filter((c) => c.call === 'openat' && /O_CREAT/.test(c.args) && /\.parquet>$/.test(c.ret));
  assert.equal(created.length, 1, `data files created: ${created.map((c) => c.ret).join(', ')}`);
  const data = fdOf(created[0].ret);
  const dataDir = path.dirname(data.path);
  assert.ok(synced.some((s) => s.path === data.path && s.end < commit.start), `the data file ${data.path} was not synced before the commit`);
  assert.ok(synced.some((s) => s.path === dataDir && s.end > created[0].end && s.end < commit.start), `${dataDir} was not synced after the data file was created and before the commit`);

  // The manifest and the manifest list: written unnamed, linked, then synced, then their directory synced.
  const links = calls.filter((c) => c.call === 'linkat' && c.ret === '0' && /\.avro"/.test(c.args));
  assert.equal(links.length, 2, `Avro files linked: ${links.map((c) => c.args).join('\n')}`);
  for (const link of links) {
    const m = /^AT_FDCWD[^,]*, "\/proc\/self\/fd\/(\d+)", (\d+<[^>]*>), "([^"]+)"/.exec(link.args);
    assert.ok(m, `unexpected linkat: ${link.args}`);
    const fd = Number(m[1]);
    const into = fdOf(m[2]).path;
    const opened = calls.filter((c) => c.call === 'openat' && /O_TMPFILE/.test(c.args) && c.end < link.start && fdOf(c.ret)?.fd === fd).at(-1);
    assert.ok(opened, `${m[3]} was not written unnamed`);
    assert.ok(!synced.some((s) => s.pid === link.pid && s.fd === fd && s.end > opened.end && s.end < link.start), `${m[3]} was synced before it was linked (its inode would reach the disk with no links)`);
    assert.ok(synced.some((s) => s.pid === link.pid && s.fd === fd && s.start > link.end && s.end < commit.start), `${m[3]} was not synced after it was linked and before the commit`);
    assert.ok(synced.some((s) => s.path === into && s.end > link.end && s.end < commit.start), `${into} was not synced after ${m[3]} was linked and before the commit`);
  }

  // Together: the syncs left for the end ran on more than one thread, and each directory was synced once.
  const late = synced.filter((s) => s.end > links.at(-1).end && s.end < commit.start);
  assert.ok(new Set(late.map((s) => s.pid)).size > 1, `the syncs before the commit ran on one thread: ${late.map((s) => `${s.pid} ${s.call}(${s.path})`).join(', ')}`);
  for (const d of [dataDir, path.join(path.dirname(dataDir), 'metadata')]) {
    assert.equal(late.filter((s) => s.path === d).length, 1, `${d} synced ${late.filter((s) => s.path === d).length} times before the commit`);
  }

  const meta = (await loadTable(ctx, 'd')).metadata;
  assert.equal(currentSnapshot(meta).summary['added-records'], '2000');
});
