// `floe ingest` of every Iceberg primitive type, required and optional, from
// CSV and from NDJSON, at each Parquet codec.  The table is created through
// the REST API with an explicit schema; after four ingests per format the
// current snapshot's manifest list and manifests (python3-avro) name the
// data files, and for each of them DuckDB shows: the values equal the source
// rows (edge values: min/max integers, NaN, +-0.0, infinities, far-past and
// far-future dates and timestamps, multibyte UTF-8, strings and binaries
// past 16 bytes, empty strings, nulls); the Parquet field ids are the
// table's; the Parquet statistics agree with the manifest's bounds
// (Appendix D decoding) and null counts, which agree with the source.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { compare, minMax, decodeBound, truncateLower, truncateUpper } from '../write-path/samples.mjs';
import {
  startCatalog, createTable, loadTable, ingest, show, snapshotFiles, currentSnapshot, localPath, mapOf, duck, sqlStr,
  kindOf, duckProjection, duckToCanon, decimalScale, tmpDir,
} from './lib.mjs';
import { PRIMITIVES, edgeValues, NULL, toCsv, toNdjson } from './values.mjs';

const CODECS = ['zstd', 'snappy', 'gzip', 'none'];
const PARQUET_CODEC = { zstd: 'ZSTD', snappy: 'SNAPPY', gzip: 'GZIP', none: 'UNCOMPRESSED' };
const NROWS = 26;
const slug = (t) => t.replace(/[^a-z0-9]+/g, '_').replace(/_$/, '');

const fields = PRIMITIVES.flatMap((t, i) => [
  { id: 2 * i + 1, name: `r_${slug(t)}`, type: t, required: true },
  { id: 2 * i + 2, name: `o_${slug(t)}`, type: t, required: false },
]);

// Rows of batch b: every edge value of every column appears; optional columns
// are null now and then (row 0: all of them).
function rowsOf(b) {
  const rows = [];
  for (let r = 0; r < NROWS; r++) {
    rows.push(fields.map((f, c) => {
      if (!f.required && (r === 0 || (r + c + b) % 5 === 0)) return NULL;
      const e = edgeValues(f.type);
      return e[(r + c + b) % e.length];
    }));
  }
  return rows;
}

let ctx;
let dir;
const batches = {}; // format -> [{codec, rows, out}]
const tables = {}; // format -> loadTable result after the ingests

before(async () => {
  ctx = await startCatalog('ingest_types');
  dir = tmpDir('ingest-types');
  for (const format of ['csv', 'ndjson']) {
    const name = `types_${format}`;
    await createTable(ctx, name, fields);
    batches[format] = [];
    for (const [b, codec] of CODECS.entries()) {
      const rows = rowsOf(b);
      const file = path.join(dir, `${format}-${codec}.${format}`);
      fs.writeFileSync(file, format === 'csv' ? toCsv(fields, rows) : toNdjson(fields, rows));
      const r = await ingest(ctx, name, [file], { args: ['--codec', codec] });
      batches[format].push({ codec, rows, r });
    }
    tables[format] = await loadTable(ctx, name);
  }
});

after(async () => {
  await ctx?.floe.stop();
});

for (const format of ['csv', 'ndjson']) {
  test(`${format}: every codec's ingest commits all rows`, () => {
    for (const { codec, r } of batches[format]) {
      assert.equal(r.code, 0, show(r));
      assert.equal(r.out.status, 'committed', show(r));
      assert.equal(r.out['rows-committed'], NROWS, show(r));
      assert.equal(r.out['rows-dead-lettered'], 0, show(r));
      assert.equal(r.out['files-written'], 1, `${codec}: ${show(r)}`);
    }
    const meta = tables[format].metadata;
    assert.equal(meta.snapshots.length, CODECS.length);
    assert.equal(currentSnapshot(meta).summary['total-records'], String(NROWS * CODECS.length));
  });

  test(`${format}: every data file reads back as its source rows, ids, stats and bounds agree`, async () => {
    const meta = tables[format].metadata;
    const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
    // the table's own ids (the catalog may have reassigned the ones we sent)
    const cols = fields.map((f) => {
      const tf = schema.fields.find((x) => x.name === f.name);
      assert.ok(tf, `column ${f.name} in the table schema`);
      assert.equal(tf.type.replace(/\s/g, ''), f.type.replace(/\s/g, ''), `${f.name} type`);
      assert.equal(tf.required, f.required);
      return { ...f, id: tf.id, kind: kindOf(f.type) };
    });
    const files = snapshotFiles(currentSnapshot(meta));
    assert.equal(files.length, CODECS.length, 'one data file per ingest');
    const con = await duck();
    const seen = new Set();
    for (const { entry, file, manifestMeta, listMeta } of files) {
      const batch = batches[format].find((x) => String(x.r.out['snapshot-id']) === entry.snapshot_id);
      assert.ok(batch, `the file's snapshot ${entry.snapshot_id} is one of the ingests`);
      seen.add(batch.codec);
      const where = `${format}/${batch.codec} ${file.file_path}`;

      // manifest and manifest-list headers
      for (const k of ['schema', 'schema-id', 'partition-spec', 'partition-spec-id', 'format-version', 'content']) {
        assert.ok(k in manifestMeta, `manifest header key ${k} (${where})`);
      }
      assert.equal(manifestMeta.content, 'data');
      assert.deepEqual(JSON.parse(manifestMeta.schema).fields.map((f) => f.id), cols.map((c) => c.id));
      for (const k of ['snapshot-id', 'parent-snapshot-id', 'sequence-number', 'format-version']) {
        assert.ok(k in listMeta, `manifest list header key ${k}`);
      }
      assert.equal(entry.status, '1');
      assert.equal(file.file_format, 'PARQUET');
      assert.equal(file.content, '0');
      const local = localPath(file.file_path);
      assert.equal(file.file_size_in_bytes, String(fs.statSync(local).size), `${where} size`);
      assert.equal(file.record_count, String(NROWS));

      // values
      const want = batch.rows.map((row) => row.map((x) => x.want));
      const reader = await con.runAndReadAll(
        `SELECT ${cols.map((c) => duckProjection(c.name, c.type)).join(', ')} FROM read_parquet(${sqlStr(local)})`);
      const got = reader.getRows();
      assert.equal(got.length, NROWS, where);
      for (let r = 0; r < NROWS; r++) {
        cols.forEach((c, i) => {
          const w = want[r][i];
          const h = duckToCanon(c.type, got[r][i]);
          const msg = `${where} row ${r} ${c.name}: got ${h} want ${w} (source ${JSON.stringify(batch.rows[r][i].csv)})`;
          if (w === null || h === null) assert.equal(h, w, msg);
          else if (c.kind === 'float') assert.ok(Number.isNaN(w) ? Number.isNaN(h) : Object.is(h, w), msg);
          else assert.equal(compare(c.kind, h, w), 0, msg);
        });
      }

      // Parquet schema: field ids, repetition
      const pschema = (await con.runAndReadAll(`SELECT * FROM parquet_schema(${sqlStr(local)})`)).getRowObjectsJson();
      assert.equal(pschema.length, cols.length + 1);
      cols.forEach((c, i) => {
        const el = pschema[i + 1];
        assert.equal(el.name, c.name);
        assert.equal(Number(el.field_id), c.id, `${c.name} field_id`);
        assert.equal(el.repetition_type, c.required ? 'REQUIRED' : 'OPTIONAL', `${c.name} repetition`);
      });

      // Parquet statistics vs the manifest vs the source
      const pmeta = (await con.runAndReadAll(
        `SELECT * FROM parquet_metadata(${sqlStr(local)}) ORDER BY row_group_id, column_id`)).getRowObjectsJson();
      const lower = mapOf(file.lower_bounds) ?? {};
      const upper = mapOf(file.upper_bounds) ?? {};
      const nulls = mapOf(file.null_value_counts) ?? {};
      const counts = mapOf(file.value_counts) ?? {};
      const nans = mapOf(file.nan_value_counts) ?? {};
      const sizes = mapOf(file.column_sizes) ?? {};
      cols.forEach((c, i) => {
        const chunks = pmeta.filter((m) => Number(m.column_id) === i);
        const values = want.map((row) => row[i]);
        const srcNulls = values.filter((x) => x === null).length;
        for (const ch of chunks) assert.equal(ch.compression, PARQUET_CODEC[batch.codec], `${where} ${c.name} codec`);
        const pNulls = chunks.reduce((s, ch) => s + Number(ch.stats_null_count), 0);
        assert.equal(pNulls, srcNulls, `${where} ${c.name} parquet null count`);
        assert.equal(nulls[c.id], String(srcNulls), `${where} ${c.name} manifest null count`);
        assert.equal(counts[c.id], String(NROWS), `${where} ${c.name} value count`);
        assert.equal(sizes[c.id], String(chunks.reduce((s, ch) => s + Number(ch.total_compressed_size), 0)), `${c.name} column size`);
        if (c.kind === 'float') {
          assert.equal(nans[c.id], String(values.filter((x) => x !== null && Number.isNaN(x)).length), `${c.name} NaN count`);
        }
        const { min, max } = minMax(c.kind, values);
        if (min === null) {
          assert.equal(lower[c.id], undefined, `${c.name}: no lower bound for an all-null column`);
          return;
        }
        const lo = decodeBound(c, lower[c.id]);
        assert.equal(compare(c.kind, lo, truncateLower(c, min)), 0, `${where} ${c.name} lower bound ${lower[c.id]}`);
        const wantUp = truncateUpper(c, max);
        if (wantUp === null) assert.equal(upper[c.id], undefined, `${c.name}: no upper bound can be written`);
        else assert.equal(compare(c.kind, decodeBound(c, upper[c.id]), wantUp), 0, `${where} ${c.name} upper bound ${upper[c.id]}`);
        if (c.kind === 'float' && Object.is(min, -0)) assert.ok(Object.is(lo, -0), `${c.name}: -0.0 is the lower bound`);
        // Parquet's own min/max (untruncated) through DuckDB, where its text is unambiguous
        const pMin = parquetStat(c, chunks.map((ch) => ch.stats_min_value), 'min');
        const pMax = parquetStat(c, chunks.map((ch) => ch.stats_max_value), 'max');
        if (['int', 'long', 'string'].includes(c.type) || c.type.startsWith('decimal')) {
          assert.notEqual(pMin, undefined, `${where} ${c.name}: the Parquet chunk has min/max statistics`);
        }
        if (pMin !== undefined) {
          assert.equal(compare(c.kind, pMin, min), 0, `${where} ${c.name} parquet min ${pMin}`);
          assert.equal(compare(c.kind, pMax, max), 0, `${where} ${c.name} parquet max ${pMax}`);
          assert.equal(compare(c.kind, truncateLower(c, pMin), lo), 0, `${c.name}: parquet min vs manifest lower`);
        }
      });
    }
    assert.deepEqual([...seen].sort(), [...CODECS].sort());
  });
}

// DuckDB's text of Parquet min/max statistics as canonical values, for the
// types whose text is exact; undefined for the others.
function parquetStat(c, texts, which) {
  const vals = texts.filter((t) => t !== null && t !== undefined);
  if (!vals.length) return undefined;
  let conv;
  switch (c.type) {
    case 'int': conv = (t) => Number(t); break;
    case 'long': conv = (t) => BigInt(t); break;
    case 'string': conv = (t) => Buffer.from(t, 'utf8'); break;
    default:
      if (c.type.startsWith('decimal')) {
        const s = decimalScale(c.type);
        conv = (t) => BigInt(t.includes('.') ? t.replace('.', '') : t + '0'.repeat(s));
        break;
      }
      return undefined;
  }
  const xs = vals.map(conv);
  return xs.reduce((a, b) => ((which === 'min' ? compare(c.kind, b, a) < 0 : compare(c.kind, b, a) > 0) ? b : a));
}

// JSON.stringify(1e20) is "100000000000000000000": valid JSON, a number, and
// cast.h says float/double take any JSON number.  floe's NDJSON reader
// (jansson without JSON_DECODE_INT_AS_REAL) refuses the whole line instead.

test('ndjson: integral doubles written without an exponent beyond int64 are doubles', async () => {
  const name = 'big_integer_doubles';
  await createTable(ctx, name, [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'd', type: 'double', required: false },
    { id: 3, name: 'f', type: 'float', required: false }]);
  const file = path.join(dir, 'big-integer-doubles.ndjson');
  const values = [1e20, -4.75862783099593e19, 2 ** 64, 1e21 - 65536];
  fs.writeFileSync(file, values.map((x, i) => `{"id":${i},"d":${JSON.stringify(x)},"f":${JSON.stringify(Math.fround(x))}}\n`).join(''));
  const r = await ingest(ctx, name, [file]);
  assert.equal(r.code, 0, show(r));
  const meta = (await loadTable(ctx, name)).metadata;
  const local = localPath(snapshotFiles(currentSnapshot(meta))[0].file.file_path);
  const got = (await (await duck()).runAndReadAll(`SELECT d, f FROM read_parquet(${sqlStr(local)}) ORDER BY id`)).getRows();
  assert.deepEqual(got.map((x) => x[0]), values);
  assert.deepEqual(got.map((x) => x[1]), values.map(Math.fround));
});
