// Floe's Parquet reader (storage/parquet/reader.c, driven through the
// tests/unit/storage/parquet_dump program): it reads back every sample the
// write path produces exactly as the writer was given it, reads files that
// DuckDB writes - every type DuckDB has, every codec, data pages v1 and v2,
// several row groups - exactly as DuckDB reads them itself, maps columns of
// files without field ids by a name mapping, and refuses corrupt files with
// a clear error instead of crashing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { buildDir, writeSamples, readJson, parquetSamples } from './samples.mjs';

const dumpBin = path.join(buildDir, 'tests', 'unit', 'storage', 'parquet_dump');

let samples;
let con;

before(async () => {
  if (!existsSync(dumpBin)) throw new Error(`${dumpBin} is missing: build it (meson compile -C ${buildDir})`);
  samples = writeSamples();
  const db = await DuckDBInstance.create(':memory:');
  con = await db.connect();
  await con.run("SET TimeZone = 'UTC'");
});

after(() => samples?.cleanup());

// Runs parquet_dump; returns { columns, rows } or { error, status }.
function dump(file, args = []) {
  const r = spawnSync(dumpBin, [...args, file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) return { error: r.stderr.trim(), status: r.status, signal: r.signal };
  const lines = r.stdout.split('\n').filter((l) => l !== '');
  const head = JSON.parse(lines[0]);
  return { columns: head.columns, count: head.rows, rows: lines.slice(1).map((l) => JSON.parse(l)), stderr: r.stderr };
}

const sq = (s) => s.replaceAll("'", "''");

for (const name of parquetSamples) {
  for (const batch of ['0', '7']) {
    test(`${name} (batches of ${batch === '0' ? 'the default' : batch} rows): the reader returns every value the writer was given`, () => {
      const want = readJson(samples.dir, `${name}.rows.json`);
      const got = dump(path.join(samples.dir, `${name}.parquet`), ['--batch', batch]);
      assert.equal(got.error, undefined, got.error);
      assert.equal(got.count, want.length);
      assert.equal(got.rows.length, want.length);
      // deepStrictEqual tells -0 from 0 and compares NaN as "NaN".
      for (let r = 0; r < want.length; r++) assert.deepStrictEqual(got.rows[r], want[r], `row ${r}`);
    });
  }
}

test('dict_fallback: dictionary and PLAIN pages mixed in one chunk read back exactly', () => {
  const got = dump(path.join(samples.dir, 'dict_fallback.parquet'));
  assert.equal(got.error, undefined, got.error);
  assert.equal(got.count, 50000);
  // write_samples: row r is [r * 7919, ["red", "green", "blue"][r % 3]].
  const cats = ['red', 'green', 'blue'];
  got.rows.forEach((row, r) => assert.deepStrictEqual(row, [String(r * 7919), cats[r % 3]], `row ${r}`));
});

// ---- files DuckDB writes ----------------------------------------------------

// Every DuckDB type with an Iceberg counterpart, nulls in each, NaN and -0.0,
// long and non-ASCII strings, plus a struct (read through) and a list and a
// UBIGINT (listed, not readable).
const duckSelect = `SELECT
  CASE WHEN i % 11 = 0 THEN NULL ELSE i % 3 = 0 END AS c_bool,
  CASE WHEN i % 13 = 1 THEN NULL ELSE (i % 50 - 25)::INTEGER END AS c_int,
  (i * 1000003 - 1099511627776)::BIGINT AS c_long,
  (i % 120 - 60)::TINYINT AS c_tiny,
  (i * 7 % 60000 - 30000)::SMALLINT AS c_small,
  (i % 250)::UTINYINT AS c_utiny,
  (i * 13 % 65000)::USMALLINT AS c_usmall,
  (i::BIGINT * 1000003 % 4294967295)::UINTEGER AS c_uint,
  (i * 3)::UBIGINT AS c_ubig,
  CASE WHEN i % 97 = 5 THEN 'nan'::FLOAT WHEN i % 89 = 3 THEN '-0.0'::FLOAT
       WHEN i % 83 = 2 THEN 'inf'::FLOAT ELSE ((i % 1000) / 8.0 - 60)::FLOAT END AS c_float,
  CASE WHEN i % 101 = 7 THEN 'nan'::DOUBLE ELSE (i * 0.25 - 100.5) / 3 END AS c_double,
  ((i % 2000 - 1000) / 10)::DECIMAL(4,1) AS c_dec4,
  (((i * 37 % 200000) - 100000) / 100)::DECIMAL(9,2) AS c_dec9,
  (i::DECIMAL(18,4) * 12345.6789 - 50000000)::DECIMAL(18,4) AS c_dec18,
  CASE WHEN i % 17 = 0 THEN NULL ELSE ((i - 2500)::DECIMAL(38,10) * 1234567890123.4567891234)::DECIMAL(38,10) END AS c_dec38,
  DATE '1970-01-01' + (i * 3 - 1000)::INTEGER AS c_date,
  TIME '00:00:00' + to_microseconds((i * 1234567) % 86400000000) AS c_time,
  make_timestamp(1600000000000000 + i * 1000003) AS c_ts,
  make_timestamp(-1000000000000 + i * 3600000000)::TIMESTAMPTZ AS c_tstz,
  make_timestamp(1600000000000000 + i * 1000)::TIMESTAMP_MS AS c_ts_ms,
  make_timestamp_ns(1600000000123456789 + i * 1000001) AS c_ts_ns,
  CASE WHEN i % 7 = 0 THEN NULL WHEN i % 5 = 0 THEN 'h\u00e9llo w\u00f6rld \u65e5\u672c ' || i
       WHEN i % 9 = 0 THEN repeat('long-', 40) || i ELSE 'name-' || (i % 300) END AS c_string,
  CASE WHEN i % 19 = 0 THEN NULL ELSE md5(i::VARCHAR)::UUID END AS c_uuid,
  unhex(substr(md5(i::VARCHAR), 1, (i % 16) * 2)) AS c_blob,
  {'a': i % 10, 'b': CASE WHEN i % 4 = 0 THEN NULL ELSE 's' || i END} AS c_struct,
  [i, i + 1] AS c_list
FROM range(0, 5000) t(i)`;

// DuckDB's reading of one column in the parquet_dump form of its type.
function duckExpr(col) {
  const ref = col.path.split('.').map((p) => `"${p}"`).join('.');
  const t = col.type;
  if (t === 'long' || t.startsWith('decimal') || t === 'uuid') return `${ref}::VARCHAR`;
  if (t === 'date') return `(${ref} - DATE '1970-01-01')`;
  if (t === 'time') {
    return `(EXTRACT(hour FROM ${ref}) * 3600000000 + EXTRACT(minute FROM ${ref}) * 60000000 + `
      + `EXTRACT(microsecond FROM ${ref}))`;
  }
  if (t === 'timestamp' || t === 'timestamptz') return `epoch_us(${ref})::VARCHAR`;
  if (t === 'timestamp_ns' || t === 'timestamptz_ns') return `epoch_ns(${ref})::VARCHAR`;
  if (t === 'binary' || t.startsWith('fixed')) return `hex(${ref})`;
  if (t === 'float' || t === 'double') return `${ref}::DOUBLE::VARCHAR`;
  if (t === 'int') return `${ref}::INTEGER`;
  return ref;
}

// One parquet_dump value against DuckDB's, both in the dump form.
function same(type, have, want) {
  if (want === null || have === null) return have === want;
  if (type === 'float' || type === 'double') {
    const num = (v) => (v === 'NaN' || v === 'nan' ? NaN : v === 'Infinity' || v === 'inf' ? Infinity
      : v === '-Infinity' || v === '-inf' ? -Infinity : Number(v));
    return Object.is(num(have), num(want));
  }
  // DuckDB hands BIGINT results over as strings.
  return String(have) === String(want);
}

async function compareWithDuckDB(file, got) {
  const sql = `SELECT ${got.columns.map(duckExpr).join(', ')} FROM read_parquet('${sq(file)}')`;
  const want = (await con.runAndReadAll(sql)).getRowsJson();
  assert.equal(got.rows.length, want.length);
  for (let r = 0; r < want.length; r++) {
    got.columns.forEach((col, c) => {
      assert.ok(same(col.type, got.rows[r][c], want[r][c]),
        `row ${r} ${col.path} (${col.type}): floe ${JSON.stringify(got.rows[r][c])}, duckdb ${JSON.stringify(want[r][c])}`);
    });
  }
}

const duckTypes = {
  c_bool: 'boolean', c_int: 'int', c_long: 'long', c_tiny: 'int', c_small: 'int', c_utiny: 'int',
  c_usmall: 'int', c_uint: 'long', c_float: 'float', c_double: 'double', c_dec4: 'decimal(4, 1)',
  c_dec9: 'decimal(9, 2)', c_dec18: 'decimal(18, 4)', c_dec38: 'decimal(38, 10)', c_date: 'date',
  c_time: 'time', c_ts: 'timestamp', c_tstz: 'timestamptz', c_ts_ms: 'timestamp',
  c_ts_ns: 'timestamp_ns', c_string: 'string', c_uuid: 'uuid', c_blob: 'binary',
  'c_struct.a': 'long', 'c_struct.b': 'string',
};

const variants = [
  ['snappy', "CODEC 'snappy'"],
  ['zstd', "CODEC 'zstd'"],
  ['gzip', "CODEC 'gzip'"],
  ['uncompressed', "CODEC 'uncompressed'"],
  ['small row groups', "CODEC 'zstd', ROW_GROUP_SIZE 1000"],
];

for (const [label, options] of variants) {
  test(`DuckDB-written file (${label}): every readable column equals DuckDB's own read`, async () => {
    const file = path.join(samples.dir, `duck-${label.replaceAll(' ', '_')}.parquet`);
    // FIELD_IDS 'auto' numbers every column; the name mapping test below
    // covers files without ids.
    await con.run(`COPY (${duckSelect}) TO '${sq(file)}' (FORMAT parquet, FIELD_IDS 'auto', ${options})`);
    const got = dump(file);
    assert.equal(got.error, undefined, got.error);
    assert.equal(got.count, 5000);
    assert.deepEqual(Object.fromEntries(got.columns.map((c) => [c.path, c.type])), duckTypes);
    // The list and the UBIGINT are listed as skipped, with the reason.
    assert.match(got.stderr, /skipping c_list\.list\.element: inside a list or map/);
    assert.match(got.stderr, /skipping c_ubig: UINT64 has no Iceberg type/);
    await compareWithDuckDB(file, got);
  });
}

test('DuckDB-written file with data page v2 (PARQUET_VERSION V2: DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, BYTE_STREAM_SPLIT) equals DuckDB\'s own read', async () => {
  const file = path.join(samples.dir, 'duck-v2.parquet');
  await con.run(`COPY (${duckSelect}) TO '${sq(file)}' (FORMAT parquet, FIELD_IDS 'auto', CODEC 'snappy', PARQUET_VERSION V2)`);
  const got = dump(file);
  assert.equal(got.error, undefined, got.error);
  assert.deepEqual(Object.fromEntries(got.columns.map((c) => [c.path, c.type])), duckTypes);
  await compareWithDuckDB(file, got);
});

test('a file without field ids maps columns through schema.name-mapping.default', async () => {
  const file = path.join(samples.dir, 'duck-noids.parquet');
  await con.run(`COPY (SELECT i AS id, 'v' || i AS data, {'x': i * 2} AS s FROM range(0, 100) t(i)) TO '${sq(file)}' (FORMAT parquet)`);
  const plain = dump(file);
  assert.equal(plain.error, undefined, plain.error);
  assert.deepEqual(plain.columns, [], 'without ids or a mapping nothing is projected');
  const mapping = path.join(samples.dir, 'mapping.json');
  writeFileSync(mapping, JSON.stringify([
    { 'field-id': 1, names: ['id', 'record_id'] },
    { 'field-id': 2, names: ['data'] },
    { 'field-id': 3, names: ['s'], fields: [{ 'field-id': 4, names: ['x'] }] },
  ]));
  const got = dump(file, ['--mapping', mapping]);
  assert.equal(got.error, undefined, got.error);
  assert.deepEqual(got.columns.map((c) => [c.path, c.field_id]), [['id', 1], ['data', 2], ['s.x', 4]]);
  assert.deepEqual(got.rows[42], ['42', 'v42', '84']);
  writeFileSync(mapping, '[{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["id"]}]');
  const dup = dump(file, ['--mapping', mapping]);
  assert.match(dup.error, /name mapping: name id is mapped twice/);
});

// ---- corrupt files --------------------------------------------------------------

test('corrupt files: truncated, wrong magic, lying lengths and bit flips give an error, never a crash', () => {
  const good = readFileSync(path.join(samples.dir, 'types_snappy.parquet'));
  const footerLen = good.readUInt32LE(good.length - 8);
  const cases = [];
  cases.push(['empty', Buffer.alloc(0), /too short for a Parquet file/]);
  cases.push(['truncated in the middle', good.subarray(0, good.length >> 1), /not a Parquet file/]);
  cases.push(['truncated footer', Buffer.concat([good.subarray(0, good.length - 20), good.subarray(good.length - 8)]), /parquet: /]);
  const magic = Buffer.from(good);
  magic.write('PAR2', 0);
  cases.push(['wrong magic', magic, /not a Parquet file \(no PAR1 magic/]);
  const lying = Buffer.from(good);
  lying.writeUInt32LE(good.length, good.length - 8);
  cases.push(['footer length past the file', lying, /the footer claims \d+ bytes of a \d+-byte file/]);
  const shorter = Buffer.from(good);
  shorter.writeUInt32LE(footerLen - 3, good.length - 8);
  cases.push(['footer length too short', shorter, /parquet: /]);
  // A page body of zeros: its header no longer parses or its data no longer decompresses.
  const pages = Buffer.from(good);
  pages.fill(0, 4, 200);
  cases.push(['zeroed first page', pages, /parquet: column c_bool, row group 0: /]);
  for (const [label, bytes, re] of cases) {
    const file = path.join(samples.dir, 'corrupt.parquet');
    writeFileSync(file, bytes);
    const got = dump(file);
    assert.equal(got.signal ?? null, null, `${label}: killed by ${got.signal}`);
    assert.equal(got.status, 1, `${label}: exit ${got.status}`);
    assert.match(got.error, re, label);
  }
  // Random bit flips anywhere: read or refused, never a signal.  The 200 files go to one
  // parquet_dump --check, which reads each whole as a dump does (a crash on any kills it).
  let seed = 12345;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
  const flipped = [];
  for (let k = 0; k < 200; k++) {
    const bytes = Buffer.from(good);
    for (let f = 0; f < 1 + (k % 4); f++) {
      const at = k < 100 ? good.length - 8 - footerLen + (rand() % footerLen) : rand() % good.length;
      bytes[at] ^= 1 << (rand() % 8);
    }
    const file = path.join(samples.dir, `flip-${k}.parquet`);
    writeFileSync(file, bytes);
    flipped.push(file);
  }
  const r = spawnSync(dumpBin, ['--check', ...flipped], { encoding: 'utf8', maxBuffer: 1 << 24 });
  assert.equal(r.signal, null, `parquet_dump --check killed by ${r.signal}: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  const results = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.deepEqual(results.map((x) => x.file), flipped, 'one line per file, in order');
  let failures = 0;
  results.forEach((x, k) => {
    if (x.error === undefined) return;
    failures++;
    assert.match(x.error, /^(parquet|name mapping): /, `flip ${k}`);
  });
  assert.ok(failures > 50, `only ${failures} of 200 flipped files were refused`);
});
