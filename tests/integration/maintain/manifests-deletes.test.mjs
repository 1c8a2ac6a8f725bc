// `floe maintain manifests` on a table with position delete files: data
// manifests and delete manifests are merged apart (one of each), every delete
// entry keeps its data sequence number (which decides the data files it
// applies to), and the rows a reader sees, deletes applied, do not change.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, currentSnapshot, localPath, readAvro, tmpDir,
} from '../ingest/lib.mjs';
import { helpers, fields, isSnap, range } from './lib.mjs';
import { liveEntries, visibleRows, positionDeleteFile, deleteHelpers } from './deletes-lib.mjs';

let ctx;
const dir = tmpDir('manifests-deletes');
let maintain;
let append;
let settled;
let reached;
let commitDeletes;

before(async () => {
  ctx = await startCatalog('manifests_deletes');
  const h = helpers(ctx, dir);
  ({ maintain, append, settled, reached } = h);
  ({ commitDeletes } = deleteHelpers(h.dropManifests));
});

after(async () => {
  await ctx?.floe.stop();
});

test('manifests: data and delete manifests are merged apart; deletes keep their sequence numbers', async () => {
  const name = 'withdeletes';
  await createTable(ctx, name, fields);
  let last;
  for (let b = 0; b < 3; b++) last = await append(name, range(b * 10, 10));
  let { meta } = await settled(name, isSnap(last));
  const data = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  assert.equal(data.length, 3);
  // Three delete commits, one position delete file each.
  for (let k = 0; k < 3; k++) {
    const d = await positionDeleteFile(path.join(localPath(meta.location), 'data', `pd${k}.parquet`), [[data[k].path, k]]);
    meta = await commitDeletes(name, meta, [{
      content: 1, file_path: d.path, file_format: 'PARQUET', record_count: d.count, file_size_in_bytes: d.size,
    }]);
  }
  // A later append: the deletes (older) must not apply to it.
  last = await append(name, range(100, 5));
  ({ meta } = await settled(name, isSnap(last)));
  const before = currentSnapshot(meta);
  const list = readAvro(before['manifest-list']).records;
  assert.deepEqual(list.map((r) => Number(r.content)).sort(), [0, 0, 0, 0, 1, 1, 1]);
  const beforeRows = await visibleRows(before);
  assert.equal(beforeRows.length, 35 - 3);
  const seqOf = (snap) => Object.fromEntries(liveEntries(snap).map((e) => [e.path, String(e.seq)]));
  const beforeSeq = seqOf(before);

  const res = maintain(name, ['manifests']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['manifests-replaced'], 7);
  assert.equal(r['manifests-created'], 2, 'one data and one delete manifest');
  assert.equal(r['entries-processed'], 7);
  const { snap: after } = await settled(name, isSnap(r['snapshot-id']));
  const newList = readAvro(after['manifest-list']).records;
  assert.deepEqual(newList.map((x) => Number(x.content)).sort(), [0, 1]);
  const delManifest = newList.find((x) => Number(x.content) === 1);
  assert.equal(delManifest.existing_files_count, '3');
  assert.equal(delManifest.first_row_id ?? null, null, 'delete manifests get no row ids');
  for (const e of readAvro(delManifest.manifest_path).records) assert.equal(e.status, '0');
  assert.deepEqual(seqOf(after), beforeSeq, 'every file keeps its data sequence number');
  assert.equal(after.summary['total-delete-files'], before.summary['total-delete-files']);
  assert.equal(after.summary['total-position-deletes'], before.summary['total-position-deletes']);
  assert.deepEqual(await visibleRows(after), beforeRows, 'the same rows, deletes applied');
  for (const f of reached(after)) assert.ok(fs.existsSync(localPath(f)), `${f} exists`);
});
