// kill -9 in the middle of a commit storm. Eight clients append to two tables with
// Idempotency-Keys (UUIDv7) while the daemon is SIGKILLed; a new daemon on the same
// database and data directory must show every acknowledged commit exactly once, a
// database pointer whose file exists and equals loadTable, and replaying every
// request of the storm with its original key must apply nothing twice.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { freshDatabase, startFloe, tmpDir, psql, sleep } from '../lib/harness.mjs';
import {
  call,
  tablePath,
  readMetadataFile,
  localPath,
  createBody,
  appendCommit,
  uuidv7,
  tryRequest,
  checkResponse,
  assertLinearHistory,
} from './lib.mjs';

const NS = ['crash'];
const TABLES = ['c0', 'c1'];
let db;
let dataDir;
let floe;
let P;

before(async () => {
  db = await freshDatabase('tbl_crash');
  dataDir = path.join(tmpDir('crash'), 'floe');
  floe = await startFloe({ databaseUrl: db.url, dataDir });
  const cfg = await call(floe.baseUrl, 'GET', '/v1/config?warehouse=default', { expect: 200 });
  P = `/v1/${cfg.json.overrides.prefix}`;
  await call(floe.baseUrl, 'POST', `${P}/namespaces`, { body: { namespace: NS }, expect: 200 });
  for (const t of TABLES) await call(floe.baseUrl, 'POST', `${P}/namespaces/crash/tables`, { body: createBody(t), expect: 200 });
});

after(async () => {
  await floe?.stop();
});

const records = []; // every keyed commit request sent during the storm

async function stormClient(base, table, state) {
  const p = tablePath(P, NS, table);
  while (!state.killed) {
    const l = await tryRequest(base, 'GET', p);
    if (l.status !== 200) return;
    const { body, snapshotId } = appendCommit(l.json.metadata, { ns: NS, name: table });
    const rec = { key: uuidv7(), path: p, table, text: JSON.stringify(body), sid: snapshotId };
    records.push(rec);
    const res = await tryRequest(base, 'POST', p, { body: rec.text, headers: { 'Idempotency-Key': rec.key } });
    rec.status = res.status;
    rec.text2 = res.text;
    rec.error = res.error;
    if (res.status === 0) return; // the daemon died under us
    if (res.status === 200) state.acks += 1;
  }
}

test('kill -9 mid-storm, restart: acknowledged commits present once, pointer and file agree, replays apply nothing twice', async () => {
  const state = { killed: false, acks: 0 };
  const base = floe.baseUrl;
  const clients = Array.from({ length: 8 }, (_, i) => stormClient(base, TABLES[i % 2], state));
  const t0 = Date.now();
  while (state.acks < 30 && Date.now() - t0 < 8000) await sleep(10);
  await sleep(Math.floor(Math.random() * 40)); // land somewhere inside a commit
  floe.proc.kill('SIGKILL');
  state.killed = true;
  const ex = await floe.exited;
  assert.equal(ex.signal, 'SIGKILL');
  await Promise.all(clients);

  const acked = records.filter((r) => r.status === 200);
  const conflicted = records.filter((r) => r.status === 409);
  const unknown = records.filter((r) => r.status === 0);
  const other = records.filter((r) => ![0, 200, 409].includes(r.status));
  assert.deepEqual(other.map((r) => `${r.status} ${r.text2}`), [], 'only 200 / 409 while the daemon was alive');
  assert.ok(acked.length >= 10, `storm too short: ${acked.length} acks`);

  // restart on the same database and data directory
  floe = await startFloe({ databaseUrl: db.url, dataDir });
  const b2 = floe.baseUrl;
  const pointers = Object.fromEntries(
    psql(db.url, "SELECT name || '|' || metadata_location FROM table_entry ORDER BY name")
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('|')),
  );
  for (const t of TABLES) {
    const l = (await call(b2, 'GET', tablePath(P, NS, t), { expect: 200 })).json;
    assert.equal(pointers[t], l['metadata-location'], `${t}: database pointer == loadTable metadata-location`);
    assert.ok(fs.existsSync(localPath(pointers[t])), `${t}: pointer file exists`);
    assert.deepEqual(readMetadataFile(pointers[t]), l.metadata, `${t}: pointer file == loadTable metadata`);
    assertLinearHistory(l, t);
    const ids = l.metadata.snapshots.map((s) => s['snapshot-id']);
    for (const r of acked.filter((x) => x.table === t)) {
      assert.equal(ids.filter((x) => x === r.sid).length, 1, `${t}: acknowledged snapshot ${r.sid} present exactly once`);
    }
    for (const r of conflicted.filter((x) => x.table === t)) {
      assert.ok(!ids.includes(r.sid), `${t}: snapshot ${r.sid} present although its commit got 409`);
    }
    const possible = new Set(records.filter((x) => x.table === t && (x.status === 200 || x.status === 0)).map((x) => x.sid));
    for (const id of ids) assert.ok(possible.has(id), `${t}: snapshot ${id} came from no acknowledged or in-flight commit`);
  }

  // replay every request of the storm with its original key and bytes
  const replayed = await Promise.all(
    records.map(async (r) => ({ r, res: checkResponse(await tryRequest(b2, 'POST', r.path, { body: r.text, headers: { 'Idempotency-Key': r.key } })) })),
  );
  for (const { r, res } of replayed) {
    if (r.status === 200 || r.status === 409) {
      assert.equal(res.status, r.status, `replay of ${r.key}: status`);
      assert.equal(res.headers['idempotent-replayed'], 'true', `replay of ${r.key}: Idempotent-Replayed header`);
      assert.equal(res.text, r.text2, `replay of ${r.key}: body byte for byte`);
    } else {
      assert.ok([200, 409].includes(res.status), `in-flight ${r.key} replayed: ${res.status} ${res.text.slice(0, 200)}`);
      r.replayStatus = res.status;
    }
  }
  for (const t of TABLES) {
    const l = (await call(b2, 'GET', tablePath(P, NS, t), { expect: 200 })).json;
    assertLinearHistory(l, `${t} after replays`);
    const ids = l.metadata.snapshots.map((s) => s['snapshot-id']);
    for (const r of records.filter((x) => x.table === t)) {
      const n = ids.filter((x) => x === r.sid).length;
      if (r.status === 200) assert.equal(n, 1, `${t}: acknowledged ${r.sid} exactly once after replays`);
      else if (r.status === 409) assert.equal(n, 0, `${t}: 409'd ${r.sid} still absent after replay`);
      else assert.ok(n <= 1, `${t}: in-flight ${r.sid} applied ${n} times`);
      if (r.status === 0 && r.replayStatus === 200) assert.equal(n, 1, `${t}: in-flight ${r.sid} replayed 200 but absent`);
      if (r.status === 0 && r.replayStatus === 409) assert.equal(n, 0, `${t}: in-flight ${r.sid} replayed 409 but present`);
    }
  }
  process.stderr.write(`# crash storm: ${acked.length} acked, ${conflicted.length} 409, ${unknown.length} in flight at kill\n`);
});
