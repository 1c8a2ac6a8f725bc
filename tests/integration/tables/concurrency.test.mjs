// Concurrent commits: many clients appending to one table (retrying on 409 the way
// PyIceberg does), one client per table across many tables, and multi-table
// transactions racing single-table commits. The invariants are the commit contract
// (DESIGN §3): a 2xx is applied exactly once, a 409 is never applied, history is a
// single chain with gap-free sequence numbers, logs are consistent, and a
// transaction is all-or-nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { sleep, request } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, tablePath, readMetadataFile, localPath, createBody, appendCommit, newSnapshotId } from './lib.mjs';

let c;
const NS = ['conc'];

before(async () => {
  c = await startCatalog('tbl_concurrency', { args: ['--threads', '8', '--db-pool-size', '16'] });
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

async function createTable(name, properties = {}) {
  return (await call(c.base, 'POST', `${c.p}/namespaces/conc/tables`, { body: createBody(name, { properties }), expect: 200 })).json;
}

async function load(name) {
  return (await call(c.base, 'GET', tablePath(c.p, NS, name), { expect: 200, timeoutMs: 60000 })).json;
}

const jitter = (lo, hi) => sleep(lo + Math.floor(Math.random() * (hi - lo)));
const versionOf = (loc) => Number(/\/metadata\/(\d{5,})-[^/]*\.metadata\.json$/.exec(loc)[1]);

// PyIceberg-style append with retry: on 409 reload, rebuild on the new parent with
// sequence-number = last + 1, recommit (same snapshot id). Records every outcome.
async function appendWithRetry(name, deadline, log) {
  const path = tablePath(c.p, NS, name);
  const sid = newSnapshotId();
  let meta = (await load(name)).metadata;
  for (let attempt = 1; ; attempt++) {
    if (Date.now() > deadline) return null;
    const { body } = appendCommit(meta, { ns: NS, name, snapshotId: sid });
    const res = await call(c.base, 'POST', path, { body, timeoutMs: 60000 });
    if (res.status === 200) {
      log.acks.push({ sid, loc: res.json['metadata-location'], seq: body.updates[0].snapshot['sequence-number'], attempt });
      const snap = res.json.metadata.snapshots.find((s) => s['snapshot-id'] === sid);
      assert.ok(snap, 'the 200 response contains the snapshot');
      assert.equal(res.json.metadata['current-snapshot-id'], sid, 'the 200 response has it as main');
      return sid;
    }
    assert.equal(res.status, 409, `append: unexpected ${res.status} ${res.text.slice(0, 300)}`);
    assert.equal(res.json.error.type, 'CommitFailedException');
    log.conflicts += 1;
    await jitter(1, 15);
    meta = (await load(name)).metadata;
    // PyIceberg checks whether its snapshot landed; after a 409 it must not have
    assert.ok(!meta.snapshots.some((s) => s['snapshot-id'] === sid), `snapshot ${sid} applied although the commit got 409`);
  }
}

// Checks the history of a table whose every snapshot was an append acknowledged in `acks`.
function checkHistory(result, acks, what) {
  const m = result.metadata;
  const ids = m.snapshots.map((s) => s['snapshot-id']);
  assert.equal(new Set(ids).size, ids.length, `${what}: a snapshot id appears twice`);
  const acked = acks.map((a) => a.sid);
  assert.equal(new Set(acked).size, acked.length);
  for (const sid of acked) assert.equal(ids.filter((x) => x === sid).length, 1, `${what}: acknowledged ${sid} not present exactly once`);
  assert.deepEqual([...ids].sort(), [...acked].sort(), `${what}: table holds exactly the acknowledged snapshots`);
  // one chain, sequence numbers 1..N without gap, each parent = previous
  const bySeq = [...m.snapshots].sort((a, b) => a['sequence-number'] - b['sequence-number']);
  bySeq.forEach((s, i) => {
    assert.equal(s['sequence-number'], i + 1, `${what}: sequence numbers strictly increase without gap`);
    if (i === 0) assert.equal(s['parent-snapshot-id'] ?? null, null, `${what}: first snapshot has no parent`);
    else assert.equal(s['parent-snapshot-id'], bySeq[i - 1]['snapshot-id'], `${what}: parent of seq ${i + 1} is seq ${i}`);
  });
  assert.equal(m['last-sequence-number'], bySeq.length);
  assert.equal(m['current-snapshot-id'], bySeq.at(-1)['snapshot-id']);
  assert.deepEqual(m.refs.main, { 'snapshot-id': bySeq.at(-1)['snapshot-id'], type: 'branch' });
  // the ack's sequence number is the one stored
  for (const a of acks) assert.equal(m.snapshots.find((s) => s['snapshot-id'] === a.sid)['sequence-number'], a.seq);
  // snapshot-log: main moved once per append, in order
  assert.deepEqual(m['snapshot-log'].map((e) => e['snapshot-id']), bySeq.map((s) => s['snapshot-id']), `${what}: snapshot-log`);
  const ts = m['snapshot-log'].map((e) => e['timestamp-ms']);
  for (const t of ts) assert.ok(Number.isInteger(t));
  // every acknowledged metadata file is distinct and numbered in commit order
  const versions = acks.map((a) => versionOf(a.loc));
  assert.equal(new Set(versions).size, versions.length, `${what}: two acknowledged commits share a metadata version`);
  assert.equal(new Set(acks.map((a) => a.loc)).size, acks.length);
  const seqToVersion = [...acks].sort((a, b) => a.seq - b.seq).map((a) => versionOf(a.loc));
  for (let i = 1; i < seqToVersion.length; i++) assert.ok(seqToVersion[i] > seqToVersion[i - 1], `${what}: versions follow commit order`);
  // metadata-log: the previous files, in order, each on disk; the last one precedes current
  const mlog = m['metadata-log'];
  const max = Number(m.properties['write.metadata.previous-versions-max'] ?? 100);
  assert.ok(mlog.length <= max, `${what}: metadata-log longer than previous-versions-max`);
  assert.equal(mlog.length, Math.min(max, versionOf(result['metadata-location'])), `${what}: metadata-log length`);
  const lv = mlog.map((e) => versionOf(e['metadata-file']));
  for (let i = 1; i < lv.length; i++) assert.equal(lv[i], lv[i - 1] + 1, `${what}: metadata-log versions consecutive`);
  assert.equal(lv.at(-1), versionOf(result['metadata-location']) - 1, `${what}: metadata-log ends with the previous file`);
  for (let i = 1; i < mlog.length; i++) assert.ok(mlog[i]['timestamp-ms'] >= mlog[i - 1]['timestamp-ms']);
  for (const e of mlog) assert.ok(fs.existsSync(localPath(e['metadata-file'])), `${what}: ${e['metadata-file']} missing on disk`);
  // every acknowledged file is on disk, and the current file is what loadTable says
  for (const a of acks) assert.ok(fs.existsSync(localPath(a.loc)), `${what}: acknowledged ${a.loc} missing`);
  assert.deepEqual(readMetadataFile(result['metadata-location']), m, `${what}: current file != loadTable`);
}

test('32 clients appending to one table, retrying on 409: each ack exactly once, gap-free history', async () => {
  // a short metadata-log so that trimming is exercised too
  await createTable('hot', { 'write.metadata.previous-versions-max': '20' });
  const deadline = Date.now() + 20000;
  const log = { acks: [], conflicts: 0 };
  const perClient = 3;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let i = 0; i < perClient; i++) if ((await appendWithRetry('hot', deadline, log)) === null) return;
    }),
  );
  const result = await load('hot');
  assert.ok(log.acks.length >= 32, `only ${log.acks.length} appends acknowledged in time`);
  assert.ok(log.conflicts > 0, '32 racing writers must have produced conflicts');
  checkHistory(result, log.acks, 'hot');
  const prom = parse((await request(c.base, 'GET', '/metrics')).text);
  assert.ok(sum(prom, 'floe_commits_total', { result: 'conflict' }) >= log.conflicts, 'floe_commits_total{result="conflict"} counts the 409s');
  assert.ok(sum(prom, 'floe_commits_total', { result: 'ok' }) >= log.acks.length, 'floe_commits_total{result="ok"} counts the commits');
  process.stderr.write(`# hot table: ${log.acks.length} appends, ${log.conflicts} conflicts (409) retried\n`);
});

test('32 tables, one client each: every commit lands first time, histories exact', async () => {
  const names = Array.from({ length: 32 }, (_, i) => `many${i}`);
  await Promise.all(names.map((n) => createTable(n)));
  const logs = Object.fromEntries(names.map((n) => [n, { acks: [], conflicts: 0 }]));
  const deadline = Date.now() + 20000;
  await Promise.all(
    names.map(async (n) => {
      for (let i = 0; i < 5; i++) assert.ok((await appendWithRetry(n, deadline, logs[n])) !== null, 'deadline');
    }),
  );
  for (const n of names) {
    assert.equal(logs[n].conflicts, 0, `${n}: a single writer must never see 409`);
    assert.equal(logs[n].acks.length, 5);
    checkHistory(await load(n), logs[n].acks, n);
  }
});

test('multi-table transactions racing single-table commits: never a partial apply', async () => {
  const names = ['tx_a', 'tx_b', 'tx_c', 'tx_d'];
  await Promise.all(names.map((n) => createTable(n)));
  const pairs = [['tx_a', 'tx_b'], ['tx_c', 'tx_d'], ['tx_a', 'tx_c'], ['tx_b', 'tx_d'], ['tx_a', 'tx_d']];
  const deadline = Date.now() + 12000;
  const txs = []; // {id, pair, status, sids}
  const singleAcks = Object.fromEntries(names.map((n) => [n, []]));
  let txSeq = 0;

  const txWorker = async () => {
    while (Date.now() < deadline) {
      const id = `t${txSeq++}`;
      const pair = pairs[Math.floor(Math.random() * pairs.length)];
      const metas = await Promise.all(pair.map(async (n) => (await load(n)).metadata));
      const changes = pair.map((n, i) => {
        const { body, snapshotId } = appendCommit(metas[i], { ns: NS, name: n });
        body.updates.push({ action: 'set-properties', updates: { [`marker.${id}`]: 'x' } });
        return { change: body, sid: snapshotId };
      });
      const res = await call(c.base, 'POST', `${c.p}/transactions/commit`, {
        body: { 'table-changes': changes.map((x) => x.change) },
        timeoutMs: 60000,
      });
      assert.ok([204, 409].includes(res.status), `transaction: unexpected ${res.status} ${res.text.slice(0, 300)}`);
      txs.push({ id, pair, status: res.status, sids: changes.map((x) => x.sid) });
      await jitter(0, 5);
    }
  };
  const singleWorker = async (n) => {
    const log = { acks: [], conflicts: 0 };
    while (Date.now() < deadline) {
      const sid = await appendWithRetry(n, deadline, log);
      if (sid === null) break;
      await jitter(0, 10);
    }
    singleAcks[n].push(...log.acks);
  };
  await Promise.all([...Array.from({ length: 6 }, txWorker), ...names.map(singleWorker), ...names.map(singleWorker)]);

  const finals = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await load(n)])));
  const ok = txs.filter((t) => t.status === 204);
  const failed = txs.filter((t) => t.status === 409);
  assert.ok(ok.length > 0, 'some transactions committed');
  assert.ok(failed.length > 0, 'some transactions conflicted (the race happened)');
  for (const t of txs) {
    const seen = t.pair.map((n, i) => ({
      marker: finals[n].metadata.properties[`marker.${t.id}`] === 'x',
      snap: finals[n].metadata.snapshots.some((s) => s['snapshot-id'] === t.sids[i]),
    }));
    const all = seen.every((s) => s.marker && s.snap);
    const none = seen.every((s) => !s.marker && !s.snap);
    assert.ok(all || none, `transaction ${t.id} on ${t.pair} partially applied: ${JSON.stringify(seen)}`);
    if (t.status === 204) assert.ok(all, `transaction ${t.id} answered 204 but is not applied`);
    else assert.ok(none, `transaction ${t.id} answered 409 but was applied`);
  }
  // each table's history holds exactly its single-table acks plus its committed transactions
  for (const n of names) {
    const acks = [...singleAcks[n]];
    for (const t of ok) {
      const i = t.pair.indexOf(n);
      if (i >= 0) acks.push({ sid: t.sids[i], loc: null, seq: null });
    }
    const m = finals[n].metadata;
    assert.deepEqual(
      m.snapshots.map((s) => s['snapshot-id']).sort(),
      acks.map((a) => a.sid).sort(),
      `${n}: snapshots = single-table acks + committed transactions`,
    );
    const seqs = m.snapshots.map((s) => s['sequence-number']).sort((a, b) => a - b);
    seqs.forEach((s, i) => assert.equal(s, i + 1, `${n}: sequence numbers gap-free`));
  }
  process.stderr.write(`# transactions: ${ok.length} committed, ${failed.length} conflicted\n`);
});

// PyIceberg's create_table_if_not_exists and iceberg-js createTableIfNotExists catch only 409.
test('racing creates of one name: exactly one 200, the rest 409 AlreadyExistsException', async () => {
  const res = await Promise.all(
    Array.from({ length: 12 }, () => call(c.base, 'POST', `${c.p}/namespaces/conc/tables`, { body: createBody('racer') })),
  );
  const ok = res.filter((r) => r.status === 200);
  assert.equal(ok.length, 1, `statuses ${res.map((r) => r.status)}`);
  for (const r of res.filter((x) => x.status !== 200)) {
    assert.equal(r.status, 409, r.text);
    assert.equal(r.json.error.type, 'AlreadyExistsException');
  }
  const l = await load('racer');
  assert.equal(l['metadata-location'], ok[0].json['metadata-location']);
  assert.equal(l.metadata['table-uuid'], ok[0].json.metadata['table-uuid']);
});

test('racing stage-create commits ([assert-create]) of one name: exactly one wins, the rest 409', async () => {
  const staged = (await call(c.base, 'POST', `${c.p}/namespaces/conc/tables`, {
    body: createBody('staged_race', { 'stage-create': true }),
    expect: 200,
  })).json.metadata;
  const commits = Array.from({ length: 12 }, (_, i) => ({
    requirements: [{ type: 'assert-create' }],
    updates: [
      { action: 'assign-uuid', uuid: staged['table-uuid'] },
      { action: 'upgrade-format-version', 'format-version': 2 },
      { action: 'add-schema', schema: staged.schemas[0] },
      { action: 'set-current-schema', 'schema-id': -1 },
      { action: 'add-spec', spec: { 'spec-id': 0, fields: [] } },
      { action: 'set-default-spec', 'spec-id': -1 },
      { action: 'add-sort-order', 'sort-order': { 'order-id': 0, fields: [] } },
      { action: 'set-default-sort-order', 'sort-order-id': -1 },
      { action: 'set-location', location: staged.location },
      { action: 'set-properties', updates: { winner: String(i) } },
    ],
  }));
  const res = await Promise.all(commits.map((body) => call(c.base, 'POST', tablePath(c.p, NS, 'staged_race'), { body })));
  const ok = res.filter((r) => r.status === 200);
  assert.equal(ok.length, 1, `statuses ${res.map((r) => `${r.status} ${r.status !== 200 ? r.text.slice(0, 120) : ''}`)}`);
  for (const r of res.filter((x) => x.status !== 200)) assert.equal(r.status, 409, r.text);
  const l = await load('staged_race');
  assert.equal(l.metadata.properties.winner, ok[0].json.metadata.properties.winner, 'the table is the winner\'s');
  assert.deepEqual(readMetadataFile(l['metadata-location']), l.metadata);
});

test('racing renames of one table: exactly one 204, the table exists once', async () => {
  await createTable('ren_src');
  const res = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      call(c.base, 'POST', `${c.p}/tables/rename`, {
        body: { source: { namespace: NS, name: 'ren_src' }, destination: { namespace: NS, name: `ren_dst${i}` } },
      }),
    ),
  );
  const ok = res.map((r, i) => [r, i]).filter(([r]) => r.status === 204);
  assert.equal(ok.length, 1, `statuses ${res.map((r) => r.status)}`);
  for (const r of res.filter((x) => x.status !== 204)) assert.equal(r.status, 404, r.text);
  const list = (await call(c.base, 'GET', `${c.p}/namespaces/conc/tables?pageSize=1000`, { expect: 200 })).json.identifiers.map((i) => i.name);
  assert.ok(!list.includes('ren_src'));
  assert.deepEqual(list.filter((n) => n.startsWith('ren_dst')), [`ren_dst${ok[0][1]}`]);
});

test('concurrent commits to one table in one process build and write each file once', async () => {
  // Commits to one table wait for each other in the daemon (catalog/db/gate.c), so no try
  // writes a metadata file that then loses the pointer move: the stage histogram counts a
  // write for every try that wrote one and an update for every pointer that moved.
  await createTable('gate');
  const path = tablePath(c.p, NS, 'gate');
  const stages = async () => {
    const prom = parse((await request(c.base, 'GET', '/metrics')).text);
    const n = (stage) => sum(prom, 'floe_commit_stage_seconds_count', { stage });
    return { gate: n('gate'), write: n('write'), update: n('update') };
  };
  const s0 = await stages();
  // six commits on one base: one applies, five are stale (409)
  const meta = (await load('gate')).metadata;
  const stale = await Promise.all(
    Array.from({ length: 6 }, () =>
      call(c.base, 'POST', path, { body: appendCommit(meta, { ns: NS, name: 'gate', snapshotId: newSnapshotId() }).body }),
    ),
  );
  assert.deepEqual(stale.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409]);
  // six compatible commits: each applies, on the version the one before left
  await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      call(c.base, 'POST', path, {
        body: { requirements: [], updates: [{ action: 'set-properties', updates: { [`gate.k${i}`]: String(i) } }] },
        expect: 200,
      }),
    ),
  );
  const props = (await load('gate')).metadata.properties;
  for (let i = 0; i < 6; i++) assert.equal(props[`gate.k${i}`], String(i), `property ${i} applied`);
  const s1 = await stages();
  assert.equal(s1.gate - s0.gate, 12, 'each of the twelve commits passed the gate (stage "gate")');
  assert.equal(s1.update - s0.update, 7, 'seven pointer moves');
  assert.equal(s1.write - s0.write, 7, 'seven metadata files written: none built on a base that another try replaced');
});
