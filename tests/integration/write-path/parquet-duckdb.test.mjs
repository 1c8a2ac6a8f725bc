// Parquet files written by storage/parquet, read back by DuckDB
// (@duckdb/node-api): values equal the source rows, parquet_schema shows the
// Iceberg field ids and the spec's type mapping, parquet_metadata statistics
// and sizes agree with the metrics the writer reported for the manifest.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  writeSamples, readJson, parquetSamples, columns, canon, compare, minMax, decodeBound,
  truncateLower, truncateUpper,
} from './samples.mjs';

let samples;
let con;

before(async () => {
  samples = writeSamples();
  const db = await DuckDBInstance.create(':memory:');
  con = await db.connect();
  await con.run("SET TimeZone = 'UTC'");
});

after(() => samples?.cleanup());

const file = (name) => path.join(samples.dir, `${name}.parquet`).replaceAll("'", "''");

// Every column in the rows.json form (see write_samples.c).
const projection = columns.map(({ name, type }) => {
  if (type === 'long' || type.startsWith('decimal') || type === 'uuid') return `${name}::VARCHAR AS ${name}`;
  if (type === 'date') return `(${name} - DATE '1970-01-01') AS ${name}`;
  if (type === 'time') {
    return `(EXTRACT(hour FROM ${name}) * 3600000000 + EXTRACT(minute FROM ${name}) * 60000000 + `
      + `EXTRACT(microsecond FROM ${name})) AS ${name}`;
  }
  if (type === 'timestamp' || type === 'timestamptz') return `epoch_us(${name})::VARCHAR AS ${name}`;
  if (type === 'timestamp_ns' || type === 'timestamptz_ns') return `epoch_ns(${name})::VARCHAR AS ${name}`;
  if (type === 'binary' || type.startsWith('fixed')) return `hex(${name}) AS ${name}`;
  return name;
}).join(', ');

for (const name of parquetSamples) {
  test(`${name}: DuckDB reads back every value`, async () => {
    const rows = readJson(samples.dir, `${name}.rows.json`);
    const reader = await con.runAndReadAll(`SELECT ${projection} FROM read_parquet('${file(name)}')`);
    const got = reader.getRowsJson();
    assert.equal(got.length, rows.length);
    for (let r = 0; r < rows.length; r++) {
      for (let c = 0; c < columns.length; c++) {
        const { kind, name: col } = columns[c];
        const want = canon(kind, rows[r][c]);
        const have = canon(kind, got[r][c]);
        if (want === null || have === null) {
          assert.equal(have, want, `row ${r} ${col}`);
        } else if (kind === 'float') {
          assert.ok(Number.isNaN(want) ? Number.isNaN(have) : have === want, `row ${r} ${col}: ${have} != ${want}`);
        } else {
          assert.equal(compare(kind, have, want), 0, `row ${r} ${col}: ${got[r][c]} != ${rows[r][c]}`);
        }
      }
    }
  });

  test(`${name}: parquet_schema has field ids and the Iceberg type mapping`, async () => {
    const reader = await con.runAndReadAll(`SELECT * FROM parquet_schema('${file(name)}')`);
    const schema = reader.getRowObjectsJson();
    assert.equal(schema.length, columns.length + 1);
    assert.equal(Number(schema[0].num_children), columns.length);
    const expect = {
      boolean: ['BOOLEAN'], int: ['INT32'], long: ['INT64'], float: ['FLOAT'], double: ['DOUBLE'],
      'decimal(9, 2)': ['INT32', 'DECIMAL', 'DecimalType(scale=2, precision=9)'],
      'decimal(18, 4)': ['INT64', 'DECIMAL', 'DecimalType(scale=4, precision=18)'],
      'decimal(38, 10)': ['FIXED_LEN_BYTE_ARRAY', 'DECIMAL', 'DecimalType(scale=10, precision=38)', '16'],
      date: ['INT32', 'DATE', 'DateType()'],
      time: ['INT64', 'TIME_MICROS', 'TimeType(isAdjustedToUTC=0, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))'],
      timestamp: ['INT64', 'TIMESTAMP_MICROS', 'TimestampType(isAdjustedToUTC=0, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))'],
      timestamptz: ['INT64', 'TIMESTAMP_MICROS', 'TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))'],
      string: ['BYTE_ARRAY', 'UTF8', 'StringType()'],
      uuid: ['FIXED_LEN_BYTE_ARRAY', null, 'UUIDType()', '16'],
      'fixed[5]': ['FIXED_LEN_BYTE_ARRAY', null, null, '5'],
      binary: ['BYTE_ARRAY'],
      timestamp_ns: ['INT64', null, 'TimestampType(isAdjustedToUTC=0, unit=TimeUnit(MILLIS=<null>, MICROS=<null>, NANOS=NanoSeconds()))'],
      timestamptz_ns: ['INT64', null, 'TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=<null>, MICROS=<null>, NANOS=NanoSeconds()))'],
    };
    columns.forEach((col, i) => {
      const el = schema[i + 1];
      const [type, converted = null, logical = null, length = null] = expect[col.type];
      assert.equal(el.name, col.name);
      assert.equal(Number(el.field_id), col.id, `${col.name} field_id`);
      assert.equal(el.type, type, `${col.name} type`);
      assert.equal(el.converted_type ?? null, converted, `${col.name} converted_type`);
      assert.equal(el.logical_type ?? null, logical, `${col.name} logical_type`);
      if (length) assert.equal(String(el.type_length), length);
      const required = col.name === 'c_id' || name === 'types_required';
      assert.equal(el.repetition_type, required ? 'REQUIRED' : 'OPTIONAL', `${col.name} repetition`);
    });
    const kv = (await con.runAndReadAll(`SELECT key::VARCHAR k, decode(value) v FROM parquet_kv_metadata('${file(name)}')`)).getRowObjectsJson();
    const schemaKv = kv.find((e) => e.k === 'iceberg.schema');
    assert.ok(schemaKv, 'iceberg.schema key');
    assert.deepEqual(JSON.parse(schemaKv.v).fields.map((f) => f.id), columns.map((c) => c.id));
  });

  test(`${name}: parquet_metadata agrees with the reported metrics and the source`, async () => {
    const rows = readJson(samples.dir, `${name}.rows.json`);
    const metrics = readJson(samples.dir, `${name}.metrics.json`);
    const meta = (await con.runAndReadAll(
      `SELECT * FROM parquet_metadata('${file(name)}') ORDER BY row_group_id, column_id`)).getRowObjectsJson();
    assert.equal(metrics.record_count, rows.length);
    const groups = [...new Set(meta.map((m) => Number(m.row_group_id)))];
    assert.equal(groups.length, metrics.split_offsets.length, 'one split offset per row group');
    let rowStart = 0;
    for (const g of groups) {
      const chunks = meta.filter((m) => Number(m.row_group_id) === g);
      const first = chunks[0];
      // a row group starts at its first column's first page
      assert.equal(metrics.split_offsets[g], Number(first.dictionary_page_offset ?? first.data_page_offset));
      const n = Number(first.row_group_num_rows);
      // chunk statistics against the source rows of this row group
      for (const chunk of chunks) {
        const col = columns[Number(chunk.column_id)];
        const values = rows.slice(rowStart, rowStart + n).map((r) => r[Number(chunk.column_id)]);
        assert.equal(Number(chunk.num_values), n);
        assert.equal(Number(chunk.stats_null_count), values.filter((v) => v === null).length, `${col.name} rg ${g} nulls`);
        assert.equal(chunk.compression, name.endsWith('_snappy') || name === 'types_required'
          ? 'SNAPPY' : name.endsWith('_gzip') ? 'GZIP' : name.endsWith('_none') ? 'UNCOMPRESSED' : 'ZSTD');
        const { min, max } = minMax(col.kind, values.map((v) => canon(col.kind, v)));
        if (['int', 'bigint', 'decimal'].includes(col.kind) && min !== null && col.type !== 'date' && col.type !== 'time'
            && !col.type.startsWith('timestamp')) {
          const scale = col.kind === 'decimal' ? Number(col.type.match(/, (\d+)\)/)[1]) : 0;
          const asCanon = (s) => (col.kind === 'int' ? Number(s) : BigInt(scale ? s.replace('.', '') : s));
          assert.equal(compare(col.kind, asCanon(chunk.stats_min_value), min), 0, `${col.name} rg ${g} min`);
          assert.equal(compare(col.kind, asCanon(chunk.stats_max_value), max), 0, `${col.name} rg ${g} max`);
        }
        if (col.kind === 'string' && min !== null) {
          assert.equal(chunk.stats_min_value, min.toString('utf8'), `${col.name} rg ${g} min`);
          assert.equal(chunk.stats_max_value, max.toString('utf8'), `${col.name} rg ${g} max`);
        }
        if (name === 'types_plain') assert.equal(chunk.encodings, 'PLAIN, RLE');
      }
      rowStart += n;
    }
    assert.equal(rowStart, rows.length);

    // file-level metrics (what goes into the manifest) against the source and the chunks
    metrics.columns.forEach((m, c) => {
      const col = columns[c];
      const chunks = meta.filter((x) => Number(x.column_id) === c);
      assert.equal(m.field_id, col.id);
      assert.equal(m.value_count, rows.length);
      assert.equal(m.column_size, chunks.reduce((s, x) => s + Number(x.total_compressed_size), 0), `${col.name} size`);
      const values = rows.map((r) => canon(col.kind, r[c]));
      assert.equal(m.null_count, values.filter((v) => v === null).length, `${col.name} nulls`);
      if (col.kind === 'float') {
        assert.equal(m.nan_count, values.filter((v) => v !== null && Number.isNaN(v)).length, `${col.name} NaNs`);
      } else {
        assert.equal(m.nan_count, null);
      }
      const { min, max } = minMax(col.kind, values);
      if (min === null) {
        assert.equal(m.lower, null);
        assert.equal(m.upper, null);
        return;
      }
      const wantLower = truncateLower(col, min);
      const wantUpper = truncateUpper(col, max);
      assert.equal(compare(col.kind, decodeBound(col, m.lower), wantLower), 0, `${col.name} lower ${m.lower}`);
      if (wantUpper === null) assert.equal(m.upper, null);
      else assert.equal(compare(col.kind, decodeBound(col, m.upper), wantUpper), 0, `${col.name} upper ${m.upper}`);
      if (col.kind === 'float' && Object.is(min, -0)) assert.ok(Object.is(decodeBound(col, m.lower), -0));
    });
  });
}

test('the string column really exercises truncation and round-up', () => {
  const metrics = readJson(samples.dir, 'types_zstd.metrics.json');
  const s = metrics.columns.find((c) => c.name === 'c_string');
  // the maximum is 18 x U+1F600; its bound is 15 of them and U+1F601
  assert.equal(Buffer.from(s.upper, 'hex').toString('utf8'), '\u{1F600}'.repeat(15) + '\u{1F601}');
  const b = metrics.columns.find((c) => c.name === 'c_binary');
  // the maximum is 20 x 0xff: no upper bound can be written
  assert.equal(b.upper, null);
});

test('a mostly unique column falls back to PLAIN, a repetitive one keeps its dictionary', async () => {
  const meta = (await con.runAndReadAll(
    `SELECT path_in_schema p, encodings e, dictionary_page_offset d FROM parquet_metadata('${file('dict_fallback')}')`)).getRowObjectsJson();
  assert.deepEqual(meta.map((m) => [m.p, m.e, m.d === null]), [
    ['id', 'PLAIN, RLE', true],
    ['category', 'PLAIN, RLE, RLE_DICTIONARY', false],
  ]);
  const [sums] = (await con.runAndReadAll(
    `SELECT count(*)::VARCHAR n, sum(id)::VARCHAR s, count(DISTINCT category)::VARCHAR c, min(category) lo
     FROM read_parquet('${file('dict_fallback')}')`)).getRowObjectsJson();
  assert.deepEqual(sums, { n: '50000', s: String(7919n * (49999n * 50000n / 2n)), c: '3', lo: 'blue' });
});
