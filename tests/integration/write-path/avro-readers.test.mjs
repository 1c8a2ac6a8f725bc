// Avro files written by storage/avro and storage/iceberg, read by three
// independent readers: Debian python3-avro (/usr/bin/python3), npm avsc, and
// icebird's Avro reader (what it uses for manifests).  Header keys are
// present, avro.schema keeps the field ids, and records decode to the values
// the writer was given.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import { bigLong } from '../lib/avro.mjs';
import { avroMetadata, avroRead } from 'icebird';
import { readAvroPython } from '../lib/pyavro.mjs';
import { writeSamples, readJson } from './samples.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
let samples;

before(() => {
  samples = writeSamples();
});

after(() => samples?.cleanup());

const manifests = ['manifest_v2_null.avro', 'manifest_v2_deflate.avro', 'manifest_v3_deflate.avro',
  'manifest_v2_nofixed.avro', 'manifest_v2_unpartitioned.avro'];
// icebird's Avro reader rejects the `fixed` type (decimal and uuid partition
// values), so it only gets the manifest whose spec has none.
const readsFixed = (rname) => rname !== 'icebird';
const lists = ['manifest_list_v2.avro', 'manifest_list_v3.avro'];

// ---- the three readers, each returning {meta, records} in one normal form ----

function norm(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return String(v);
  if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : String(v);
  if (typeof v === 'boolean' || typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex').toUpperCase();
  if (v instanceof Date) return String(v.getTime());
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
        meta = Object.fromEntries(Object.entries(header.meta).map(([k, v]) => [k, k === 'binary-meta'
          ? v.toString('hex') : v.toString('utf8')]));
      })
      .on('data', (r) => records.push(norm({ ...r })))
      .on('error', reject)
      .on('end', () => resolve({ meta, records }));
  });
}

function readIcebird(file) {
  const buf = readFileSync(file);
  const reader = { view: new DataView(buf.buffer, buf.byteOffset, buf.byteLength), offset: 0 };
  const { metadata, syncMarker } = avroMetadata(reader);
  const records = avroRead({ reader, metadata, syncMarker });
  const meta = Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  return { meta, records: records.map(norm) };
}

const readers = { python3_avro: readPython, avsc: readAvsc, icebird: readIcebird };

// Unscaled value of a decimal however the reader gave it (python: unscaled
// digits; avsc/icebird: the fixed bytes, or icebird's number).
function decimalUnscaled(v) {
  if (/^-?\d+$/.test(v)) return BigInt(v);
  const b = Buffer.from(v, 'hex');
  let x = 0n;
  for (const byte of b) x = (x << 8n) | BigInt(byte);
  if (b[0] & 0x80) x -= 1n << BigInt(8 * b.length);
  return x;
}

// Collects the field ids of an Avro schema (field-id, element-id, key/value ids).
function fieldIds(schema, out = new Set()) {
  if (Array.isArray(schema)) schema.forEach((s) => fieldIds(s, out));
  else if (schema && typeof schema === 'object') {
    for (const k of ['field-id', 'element-id']) if (schema[k] !== undefined) out.add(schema[k]);
    Object.values(schema).forEach((s) => fieldIds(s, out));
  }
  return out;
}

const mapOf = (arr) => (arr === null ? null : Object.fromEntries(arr.map((e) => [String(e.key), e.value])));
const expectMap = (arr) => Object.fromEntries(arr.map((e) => [String(e.key), String(e.value)]));

// ---- generic datums ----

for (const [rname, read] of Object.entries(readers)) {
  for (const file of ['datums_null.avro', 'datums_deflate.avro']) {
    test(`${rname}: ${file} decodes every datum type and keeps header metadata`, async () => {
      const { meta, records } = await read(path.join(samples.dir, file));
      const expect = readJson(samples.dir, 'datums.expect.json');
      assert.equal(meta['floe.sample'], 'datums');
      if (rname !== 'icebird') assert.equal(meta['binary-meta'], '0001ff');
      assert.equal(meta['avro.codec'], file.includes('deflate') ? 'deflate' : 'null');
      const schema = JSON.parse(meta['avro.schema']);
      assert.deepEqual([...fieldIds(schema)].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
      assert.equal(records.length, expect.length);
      records.forEach((r, i) => {
        const e = expect[i];
        assert.equal(r.i, String(e.i));
        assert.equal(r.l, e.l);
        assert.equal(r.s, e.s);
        assert.equal(r.b, e.b);
        assert.equal(r.t, e.t);
        assert.ok(Number(r.f) === e.f, `f ${r.f} ${e.f}`); // === : -0 equals 0 here
        assert.ok(Number(r.d) === e.d, `d ${r.d} ${e.d}`);
        assert.equal(r.o, e.o);
        assert.deepEqual(r.a.map(Number), e.a);
        assert.deepEqual(r.m.map((x) => [Number(x.key), x.value]), e.m.map((x) => [x.key, x.value]));
        assert.equal(r.r.x, e.r.x);
      });
    });
  }
}

// ---- manifests ----

for (const [rname, read] of Object.entries(readers)) {
  for (const file of manifests.filter((f) => readsFixed(rname) || !/_v[23]_(null|deflate)/.test(f))) {
    test(`${rname}: ${file} has the Iceberg header keys and the data_file entries`, async () => {
      const { meta, records } = await read(path.join(samples.dir, file));
      const expect = readJson(samples.dir, `${file}.expect.json`);
      const v3 = expect.format_version === 3;
      assert.equal(meta['format-version'], String(expect.format_version));
      assert.equal(meta.content, 'data');
      assert.equal(meta['partition-spec-id'], '3');
      assert.deepEqual(JSON.parse(meta['partition-spec']), JSON.parse(expect.partition_spec));
      assert.deepEqual(JSON.parse(meta.schema), JSON.parse(expect.schema));
      const ids = fieldIds(JSON.parse(meta['avro.schema']));
      const required = [0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 108, 109, 110, 117, 118, 119, 120, 121, 122,
        125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140,
        ...JSON.parse(expect.partition_spec).map((pf) => pf['field-id'])];
      for (const id of required) assert.ok(ids.has(id), `field id ${id} in avro.schema`);
      for (const id of [142, 143, 144, 145]) assert.equal(ids.has(id), v3, `field id ${id} (v3 only)`);
      for (const id of [105, 106, 107, 111]) assert.ok(!ids.has(id), `deprecated field id ${id}`);

      assert.equal(records.length, expect.entries.length);
      records.forEach((r, i) => {
        const e = expect.entries[i];
        const f = r.data_file;
        assert.equal(r.status, String(e.status));
        assert.equal(r.snapshot_id, e.snapshot_id);
        assert.equal(r.sequence_number, e.sequence_number === null ? null : String(e.sequence_number));
        assert.equal(r.file_sequence_number, e.file_sequence_number === null ? null : String(e.file_sequence_number));
        assert.equal(f.content, '0');
        assert.equal(f.file_path, e.file_path);
        assert.equal(f.file_format, 'PARQUET');
        assert.equal(f.record_count, String(e.record_count));
        assert.equal(f.file_size_in_bytes, String(e.file_size_in_bytes));
        for (const k of ['column_sizes', 'value_counts', 'null_value_counts', 'nan_value_counts', 'lower_bounds', 'upper_bounds']) {
          assert.deepEqual(mapOf(f[k]), e[k].length ? expectMap(e[k]) : null, `${k} of entry ${i}`);
        }
        assert.deepEqual(f.split_offsets, e.split_offsets.length ? e.split_offsets.map(String) : null);
        assert.equal(f.sort_order_id, e.sort_order_id === null ? null : String(e.sort_order_id));
        assert.equal(f.equality_ids, null);
        assert.equal(f.key_metadata, null);
        if (v3) {
          assert.equal(f.first_row_id, null);
          assert.equal(f.referenced_data_file, null);
        }
        // the partition tuple: exactly the spec's fields, in order, with the values given
        const p = f.partition;
        const ep = e.partition;
        assert.deepEqual(Object.keys(p), JSON.parse(expect.partition_spec).map((pf) => pf.name));
        for (const [k, want] of Object.entries(ep)) {
          const have = p[k];
          if (want === null) assert.equal(have, null, k);
          else if (k === 'c_dec9') assert.equal(decimalUnscaled(have), BigInt(want));
          else if (k === 'c_uuid') assert.equal(have.toLowerCase(), want.replaceAll('-', ''));
          else if (k === 'c_double' && want !== 'NaN') assert.equal(Number(have), want);
          // icebird hands logical dates and timestamps over as JS Dates (ms)
          else if (k === 'c_date_day' && rname === 'icebird') assert.equal(Number(have) / 86400000, want);
          else if (k === 'c_tstz' && rname === 'icebird') assert.equal(have, String(BigInt(want) / 1000n));
          else assert.equal(have, typeof want === 'string' || typeof want === 'boolean' ? want : String(want), k);
        }
      });
    });
  }

  for (const file of lists) {
    test(`${rname}: ${file} has the snapshot header keys and the manifest_file rows`, async () => {
      const { meta, records } = await read(path.join(samples.dir, file));
      const expect = readJson(samples.dir, `${file}.expect.json`);
      const v3 = expect.format_version === 3;
      assert.equal(meta['snapshot-id'], '8765432109876543210');
      assert.equal(meta['parent-snapshot-id'], v3 ? '1234' : 'null');
      assert.equal(meta['sequence-number'], '9');
      assert.equal(meta['format-version'], String(expect.format_version));
      assert.equal(meta['first-row-id'], v3 ? '1000' : undefined);
      const ids = fieldIds(JSON.parse(meta['avro.schema']));
      for (const id of [500, 501, 502, 503, 504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517, 518, 519]) {
        assert.ok(ids.has(id), `field id ${id}`);
      }
      assert.equal(ids.has(520), v3);
      assert.equal(records.length, expect.manifests.length);
      let nextRowId = 1000n;
      records.forEach((r, i) => {
        const e = expect.manifests[i];
        assert.equal(r.manifest_path, e.manifest_path);
        assert.equal(r.manifest_length, String(e.manifest_length));
        assert.equal(r.partition_spec_id, '3');
        assert.equal(r.content, '0');
        assert.equal(r.sequence_number, '9'); // inherited from the snapshot
        assert.equal(r.min_sequence_number, '7'); // the EXISTING entry's
        assert.equal(r.added_snapshot_id, '8765432109876543210');
        assert.equal(r.added_files_count, String(e.added_files_count));
        assert.equal(r.existing_files_count, String(e.existing_files_count));
        assert.equal(r.deleted_files_count, '0');
        assert.equal(r.added_rows_count, String(e.added_rows_count));
        assert.equal(r.existing_rows_count, String(e.existing_rows_count));
        assert.equal(r.deleted_rows_count, '0');
        if (v3) {
          assert.equal(r.first_row_id, String(nextRowId));
          nextRowId += BigInt(e.added_rows_count) + BigInt(e.existing_rows_count);
        }
        // partition summaries, in spec order (see write_samples.c)
        const s = r.partitions;
        assert.equal(s.length, 10);
        assert.deepEqual([s[0].lower_bound, s[0].upper_bound], ['FEFFFFFF', '04000000']); // c_int -2..4
        assert.equal(s[0].contains_null, false);
        assert.equal(s[0].contains_nan, null); // not a float field
        assert.equal(s[5].contains_nan, true); // c_double has a NaN partition
        assert.deepEqual([s[5].lower_bound, s[5].upper_bound], ['0000000000000000', '0000000000002240']); // 0.0..9.0
        assert.equal(s[6].contains_null, true); // c_ts_hour is always null
        assert.equal(s[6].lower_bound, null);
        assert.equal(Buffer.from(s[1].lower_bound, 'hex').toString(), 'types_empty');
        assert.equal(Buffer.from(s[1].upper_bound, 'hex').toString(), 'types_zstd');
      });
      if (v3) assert.equal(String(nextRowId), String(expect.next_row_id));
    });
  }
}
