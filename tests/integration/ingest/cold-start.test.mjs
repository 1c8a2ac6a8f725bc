// What `floe ingest` maps at process start (issue 9): libcurl, libmicrohttpd,
// libjwt and libsnappy are loaded on first use (common/dl.h), so an ingest
// into the default file:// warehouse with the default codec (zstd) and `floe
// version` must never map them - nor their chains (nghttp2, ssh2, rtmp, ...;
// libstdc++ for snappy), which cost milliseconds of relocation on every cold
// start.  The dynamic loader itself reports what it maps
// (LD_DEBUG=files), so a regression that links one of them again, directly or
// through another library, fails here.  `floe serve` loads them at start
// (a missing one stops it there): its /proc/PID/maps must show those three.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runFloe } from '../lib/harness.mjs';
import { startCatalog, createTable, ingest, show, loadTable, currentSnapshot, tmpDir } from './lib.mjs';

const served = ['libcurl', 'libmicrohttpd', 'libjwt'];
// (Not libstdc++ itself, snappy's chain: a sanitizer build's libubsan maps it.)
const lazy = [...served, 'libsnappy'];
let ctx;

// The libraries the loader opened, from LD_DEBUG=files lines such as
// "   1234:	file=libpq.so.5 [0];  needed by ./floe [0]".
function mapped(stderr) {
  return [...stderr.matchAll(/\bfile=(\S+) \[\d+\];/g)].map((m) => path.basename(m[1]));
}

function assertNoLazyLib(libs, what) {
  // The check is only meaningful if the loader did report: libpq is always linked.
  assert.ok(libs.some((l) => l.startsWith('libpq.so')), `${what}: LD_DEBUG=files reported nothing: ${libs}`);
  for (const name of lazy) {
    const hit = libs.filter((l) => l.startsWith(`${name}.so`) || l.startsWith(`${name}-`));
    assert.deepEqual(hit, [], `${what} mapped ${hit.join(', ')}; it must load ${name} only on first use`);
  }
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
  assertNoLazyLib(mapped(r.stderr), 'floe version');
});

test('floe ingest of a local CSV into a file:// warehouse commits without mapping them', async () => {
  const file = path.join(tmpDir('ingest-cold'), 'rows.csv');
  const rows = Array.from({ length: 1000 }, (_, i) => `${i},name ${i}`);
  fs.writeFileSync(file, `id,name\n${rows.join('\n')}\n`);
  const r = await ingest(ctx, 'cold', [file], { env: { LD_DEBUG: 'files' } });
  assert.equal(r.code, 0, show(r));
  assertNoLazyLib(mapped(r.stderr), 'floe ingest');
  const meta = (await loadTable(ctx, 'cold')).metadata;
  assert.equal(currentSnapshot(meta).summary['added-records'], '1000');
});

test('floe serve has libcurl, libmicrohttpd and libjwt mapped from its start', () => {
  const maps = fs.readFileSync(`/proc/${ctx.floe.proc.pid}/maps`, 'utf8');
  for (const name of served) assert.match(maps, new RegExp(`/${name}[^/\\n]*\\.so`), `floe serve has no ${name} mapped`);
});
