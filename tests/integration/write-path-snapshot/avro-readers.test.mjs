// The manifest lists and manifests the snapshot builder writes for three
// appends, read by Debian python3-avro (/usr/bin/python3) and npm avsc:
// header keys, the list order (new manifest first, then the parent's),
// sequence numbers and counts carried from list to list, v3 row ids, the
// retry that reuses its manifest, and summary totals that agree with the
// files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { bigLong } from '../lib/avro.mjs';
import { readAvroPython } from '../lib/pyavro.mjs';
import { writeTable, localPath, batchRows, batchFiles } from './snapshots.mjs';

const tables = {};

before(() => {
  tables.v2 = writeTable(2, 'null');
  tables.v3 = writeTable(3, 'deflate');
});

after(() => {
  for (const t of Object.values(tables)) t.cleanup();
});

// Both readers return { meta: {key: string}, records } with integers as
// decimal strings and bytes as upper-case hex (read_avro.py's form).
function norm(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return String(v);
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean' || typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex').toUpperCase();
  if (Array.isArray(v)) return v.map(norm);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, norm(x)]));
}

const readPython = readAvroPython;

function readAvsc(file) {
  return new Promise((resolve, reject) => {
    let meta;
    const records = [];
    avro.createFileDecoder(file, {
      parseHook: (schema) => avro.Type.forSchema(schema, { registry: { long: bigLong } }),
    })
      .on('metadata', (type, codec, header) => {
        meta = Object.fromEntries(Object.entries(header.meta).map(([k, v]) => [k, v.toString('utf8')]));
      })
      .on('data', (r) => records.push(norm({ ...r })))
      .on('error', reject)
      .on('end', () => resolve({ meta, records }));
  });
}

const readers = { python3_avro: readPython, avsc: readAvsc };

for (const [rname, read] of Object.entries(readers)) {
  for (const tname of ['v2', 'v3']) {
    test(`${rname}: ${tname} manifest lists hold the new manifest first, then the parent's`, async () => {
      const { table } = tables[tname];
      const snaps = table.snapshots;
      const v3 = table.format_version === 3;
      for (let i = 0; i < 3; i++) {
        const s = snaps[i];
        const { meta, records } = await read(localPath(s['manifest-list']));
        assert.equal(meta['avro.codec'] ?? 'null', v3 ? 'deflate' : 'null');
        assert.equal(meta['snapshot-id'], String(s['snapshot-id']));
        assert.equal(meta['parent-snapshot-id'], i === 0 ? 'null' : String(snaps[i - 1]['snapshot-id']));
        assert.equal(meta['sequence-number'], String(i + 1));
        assert.equal(meta['format-version'], String(table.format_version));
        if (v3) assert.equal(meta['first-row-id'], String(s['first-row-id']));
        else assert.equal(meta['first-row-id'], undefined);
        assert.equal(records.length, i + 1);
        records.forEach((r, k) => {
          const b = i - k; // the batch that added this manifest
          assert.equal(r.manifest_path, table.manifests[b], `list ${i} entry ${k}`);
          assert.equal(r.sequence_number, String(b + 1));
          assert.equal(r.min_sequence_number, String(b + 1));
          assert.equal(r.added_snapshot_id, String(snaps[b]['snapshot-id']));
          assert.equal(r.content, '0');
          assert.equal(r.partition_spec_id, '0');
          assert.equal(r.added_files_count, String(batchFiles[b]));
          assert.equal(r.existing_files_count, '0');
          assert.equal(r.deleted_files_count, '0');
          assert.equal(r.added_rows_count, String(batchRows[b]));
          assert.deepEqual(r.partitions, []);
          assert.equal(r.key_metadata, null);
          if (v3) assert.equal(r.first_row_id, String(snaps[b]['first-row-id']));
        });
      }
    });

    test(`${rname}: ${tname} manifests hold ADDED entries that inherit sequence numbers`, async () => {
      const { table } = tables[tname];
      const v3 = table.format_version === 3;
      for (let b = 0; b < 3; b++) {
        const { meta, records } = await read(localPath(table.manifests[b]));
        assert.deepEqual(JSON.parse(meta.schema), table.schema);
        assert.deepEqual(JSON.parse(meta['partition-spec']), []);
        assert.equal(meta['partition-spec-id'], '0');
        assert.equal(meta['format-version'], String(table.format_version));
        assert.equal(meta.content, 'data');
        assert.equal(records.length, batchFiles[b]);
        let rows = 0;
        for (const e of records) {
          assert.equal(e.status, '1');
          assert.equal(e.snapshot_id, String(table.snapshots[b]['snapshot-id']));
          assert.equal(e.sequence_number, null);
          assert.equal(e.file_sequence_number, null);
          assert.ok(e.data_file.file_path.startsWith(`${table.location}/data/b${b + 1}-`), e.data_file.file_path);
          assert.equal(e.data_file.file_format, 'PARQUET');
          assert.equal(e.data_file.content, '0');
          if (v3) assert.equal(e.data_file.first_row_id, null);
          rows += Number(e.data_file.record_count);
        }
        assert.equal(rows, batchRows[b]);
      }
    });
  }
}

test('summaries: Appendix F keys agree with the files the lists name', async () => {
  for (const { table } of Object.values(tables)) {
    let records = 0;
    let files = 0;
    let size = 0;
    for (let i = 0; i < 3; i++) {
      const s = table.snapshots[i];
      const sum = s.summary;
      // sizes from the manifests themselves
      const { records: entries } = readPython(localPath(table.manifests[i]));
      const added = entries.reduce((a, e) => a + Number(e.data_file.file_size_in_bytes), 0);
      records += batchRows[i];
      files += batchFiles[i];
      size += added;
      assert.equal(sum.operation, 'append');
      assert.equal(sum['added-data-files'], String(batchFiles[i]));
      assert.equal(sum['added-records'], String(batchRows[i]));
      assert.equal(sum['added-files-size'], String(added));
      assert.equal(sum['changed-partition-count'], '1');
      assert.equal(sum['total-records'], String(records));
      assert.equal(sum['total-data-files'], String(files));
      assert.equal(sum['total-files-size'], String(size));
      assert.equal(sum['total-delete-files'], '0');
      assert.equal(sum['total-position-deletes'], '0');
      assert.equal(sum['total-equality-deletes'], '0');
      assert.equal(sum['floe.batch-id'], `batch-${'abc'[i]}`);
      assert.equal(s['sequence-number'], i + 1);
      assert.equal(s['schema-id'], 0);
      if (i === 0) assert.equal('parent-snapshot-id' in s, false);
      else assert.equal(s['parent-snapshot-id'], table.snapshots[i - 1]['snapshot-id']);
      if (table.format_version === 3) {
        assert.equal(s['added-rows'], batchRows[i]);
        assert.equal(s['first-row-id'], batchRows.slice(0, i).reduce((a, b) => a + b, 0));
      } else {
        assert.equal('first-row-id' in s, false);
        assert.equal('added-rows' in s, false);
      }
    }
    assert.equal(table.rows.length, records);
  }
});

test('retry: the stale attempt and the retry share one manifest; only the lists differ', async () => {
  for (const { table } of Object.values(tables)) {
    const stale = table.stale_attempt;
    const final = table.snapshots[2];
    assert.match(stale['manifest-list'], /\/metadata\/snap-1002-1-[0-9a-f-]{36}\.avro$/);
    assert.match(final['manifest-list'], /\/metadata\/snap-1002-2-[0-9a-f-]{36}\.avro$/);
    assert.equal(stale['parent-snapshot-id'], table.snapshots[0]['snapshot-id']);
    assert.equal(stale.summary['total-records'], String(batchRows[0] + batchRows[2]));
    const a = await readAvsc(localPath(stale['manifest-list']));
    const b = readPython(localPath(final['manifest-list']));
    assert.deepEqual(a.records.map((r) => r.manifest_path), [table.manifests[2], table.manifests[0]]);
    assert.deepEqual(b.records.map((r) => r.manifest_path), [table.manifests[2], table.manifests[1], table.manifests[0]]);
    // the reused manifest inherits whichever sequence number its list gives it
    assert.equal(a.records[0].sequence_number, '2');
    assert.equal(b.records[0].sequence_number, '3');
  }
});
