// What `floe` maps at process start (issue 9): libpq, libcurl, libmicrohttpd,
// libjwt, libcrypto and libsnappy are loaded on first use (common/dl.h), so
// - `floe version` maps none of them, nor their chains (Kerberos, LDAP and
//   GnuTLS for libpq; nghttp2, ssh2, rtmp, ... for libcurl; libstdc++ for
//   snappy), which cost milliseconds of relocation on every cold start;
// - an ingest into the default file:// warehouse with the default codec
//   (zstd) maps libpq, once it connects, and libcrypto (which libpq links and
//   the batch identity hashes with), and none of the others;
// - an ingest through an http:// catalog (--catalog-uri) maps libcrypto, on
//   the thread that hashes its inputs, but neither libpq nor libcurl: Floe's
//   own HTTP/1.1 client speaks to the catalog.
// The dynamic loader itself reports what it maps, dlopen()ed or not
// (LD_DEBUG=files), so a regression that links one of them again, directly
// or through another library, fails here.  `floe serve` loads them at start
// (a missing one stops it there): its /proc/PID/maps must show them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { runFloe, floeBin } from '../lib/harness.mjs';
import { startCatalog, createTable, ingest, show, loadTable, currentSnapshot, tmpDir } from './lib.mjs';

const served = ['libpq', 'libcurl', 'libmicrohttpd', 'libjwt', 'libcrypto'];
// (Not libstdc++ itself, snappy's chain: a sanitizer build's libubsan maps it.)
const lazy = [...served, 'libsnappy'];
let ctx;

// The libraries the loader opened, from LD_DEBUG=files lines such as
// "   1234:	file=libjansson.so.4 [0];  needed by ./floe [0]" and
// "   1234:	file=libpq.so.5 [0];  dynamically loaded by ./floe [0]".
function mapped(stderr) {
  return [...stderr.matchAll(/\bfile=(\S+) \[\d+\];/g)].map((m) => path.basename(m[1]));
}

function assertMaps(libs, what, { yes = [], no = lazy } = {}) {
  // The check is only meaningful if the loader did report: libjansson is always linked.
  assert.ok(libs.some((l) => l.startsWith('libjansson.so')), `${what}: LD_DEBUG=files reported nothing: ${libs}`);
  const has = (name) => libs.filter((l) => l.startsWith(`${name}.so`) || l.startsWith(`${name}-`));
  for (const name of no) {
    assert.deepEqual(has(name), [], `${what} mapped ${has(name).join(', ')}; it must load ${name} only on first use`);
  }
  for (const name of yes) assert.notDeepEqual(has(name), [], `${what} did not map ${name}: ${libs}`);
}

function csv(name) {
  const file = path.join(tmpDir('ingest-cold'), name);
  const rows = Array.from({ length: 1000 }, (_, i) => `${i},name ${i}`);
  fs.writeFileSync(file, `id,name\n${rows.join('\n')}\n`);
  return file;
}

before(async () => {
  ctx = await startCatalog('ingest_cold_start');
  await createTable(ctx, 'cold', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'name', type: 'string', required: false },
  ]);
});

after(async () => {
  await ctx?.floe.stop();
});

test('floe version maps none of the libraries loaded on first use', () => {
  const r = runFloe(['version'], { env: { LD_DEBUG: 'files' } });
  assert.equal(r.code, 0, r.stderr.slice(0, 800));
  assertMaps(mapped(r.stderr), 'floe version');
});

test('floe ingest of a local CSV into a file:// warehouse maps libpq and libcrypto, and none of the others', async () => {
  const r = await ingest(ctx, 'cold', [csv('rows.csv')], { env: { LD_DEBUG: 'files' } });
  assert.equal(r.code, 0, show(r));
  const yes = ['libpq', 'libcrypto'];
  assertMaps(mapped(r.stderr), 'floe ingest', { yes, no: lazy.filter((l) => !yes.includes(l)) });
  const meta = (await loadTable(ctx, 'cold')).metadata;
  assert.equal(currentSnapshot(meta).summary['added-records'], '1000');
});

test('floe ingest through an http:// catalog maps libcrypto but neither libpq nor libcurl', async () => {
  const r = await ingest(ctx, 'cold', [csv('rows-rest.csv')], { rest: true, env: { LD_DEBUG: 'files' } });
  assert.equal(r.code, 0, show(r));
  assert.equal(r.out.status, 'committed', show(r));
  assertMaps(mapped(r.stderr), 'floe ingest --catalog-uri', { yes: ['libcrypto'], no: lazy.filter((l) => l !== 'libcrypto') });
  const meta = (await loadTable(ctx, 'cold')).metadata;
  assert.equal(currentSnapshot(meta).summary['total-records'], '2000');
});

test('floe serve has libpq, libcurl, libmicrohttpd, libjwt and libcrypto mapped from its start', () => {
  const maps = fs.readFileSync(`/proc/${ctx.floe.proc.pid}/maps`, 'utf8');
  for (const name of served) assert.match(maps, new RegExp(`/${name}[^/\\n]*\\.so`), `floe serve has no ${name} mapped`);
});

// libcrypto is loaded on first use too, so a broken one no longer stops
// every command before main: an empty library under its name, found first
// through LD_LIBRARY_PATH, leaves `floe version` working and makes an ingest
// fail with an error that names it, committing nothing.
test('an unusable libcrypto is named by the ingest that needs it, and stops nothing else', async (t) => {
  const listed = path.join(path.dirname(path.dirname(floeBin)), 'dlopen-libs.txt');
  const soname = fs.existsSync(listed)
    ? fs.readFileSync(listed, 'utf8').split('\n').find((l) => l.startsWith('libcrypto.'))
    : 'libcrypto.so.3';
  const dir = tmpDir('fake-crypto');
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', path.join(dir, soname), '-x', 'c', '/dev/null'], { encoding: 'utf8' });
  if (cc.error || cc.status !== 0) {
    t.skip(`no C compiler to build a stand-in library: ${cc.error?.message ?? cc.stderr}`);
    return;
  }
  const env = { LD_LIBRARY_PATH: dir };
  const v = runFloe(['version'], { env });
  assert.equal(v.code, 0, v.stderr.slice(0, 800));
  const before = (await loadTable(ctx, 'cold')).metadata.snapshots.length;
  const r = await ingest(ctx, 'cold', [csv('rows-nocrypto.csv')], { rest: true, env });
  assert.notEqual(r.code, 0, show(r));
  assert.equal(r.out?.status, 'failed', show(r));
  assert.match(r.out.error, new RegExp(`cannot load ${soname.replace(/\./g, '\\.')}: symbol \\w+`), show(r));
  assert.equal((await loadTable(ctx, 'cold')).metadata.snapshots.length, before, 'nothing was committed');
});
