// Parquet files written by storage/parquet, read by hyparquet (pure
// JavaScript, its own Thrift and page decoders): rows match the source for
// every codec, and the footer carries the field ids, statistics and
// iceberg.schema.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { parquetReadObjects, parquetMetadataAsync, asyncBufferFromFile } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { writeSamples, readJson, parquetSamples, columns } from './samples.mjs';

let samples;

before(() => {
  samples = writeSamples();
});

after(() => samples?.cleanup());

// hyparquet's JS value against the rows.json form of the source.
function same(col, have, want) {
  if (want === null) return have === null || have === undefined;
  switch (col.type) {
    case 'long':
    case 'time': return have === BigInt(want);
    case 'float':
    case 'double': return want === 'NaN' ? Number.isNaN(have) : have === want;
    case 'date': return have instanceof Date && have.getTime() === want * 86400000;
    case 'timestamp':
    case 'timestamptz': return Math.abs(have.getTime() - Number(BigInt(want) / 1000n)) <= 1;
    case 'timestamp_ns':
    case 'timestamptz_ns': return Math.abs(have.getTime() - Number(BigInt(want) / 1000000n)) <= 1;
    case 'uuid': return have === want;
    case 'binary':
    case 'fixed[5]': return Buffer.from(have).toString('hex').toUpperCase() === want;
    default:
      if (col.type.startsWith('decimal')) {
        // hyparquet decodes decimals to doubles: compare to double precision
        return Math.abs(Number(have) - Number(want)) <= Math.abs(Number(want)) * 1e-15;
      }
      return have === want;
  }
}

for (const name of parquetSamples) {
  test(`${name}: hyparquet reads the rows and the footer`, async () => {
    const file = await asyncBufferFromFile(path.join(samples.dir, `${name}.parquet`));
    const meta = await parquetMetadataAsync(file);
    const rows = readJson(samples.dir, `${name}.rows.json`);
    const metrics = readJson(samples.dir, `${name}.metrics.json`);

    assert.equal(Number(meta.num_rows), rows.length);
    assert.deepEqual(meta.schema.slice(1).map((e) => [e.name, e.field_id]), columns.map((c) => [c.name, c.id]));
    const kv = Object.fromEntries((meta.key_value_metadata ?? []).map((e) => [e.key, e.value]));
    assert.equal(JSON.parse(kv['iceberg.schema']).fields.length, columns.length);
    assert.match(meta.created_by, /^floe version /);
    assert.equal(meta.row_groups.length, metrics.split_offsets.length);
    meta.row_groups.forEach((rg, g) => {
      assert.equal(Number(rg.file_offset), metrics.split_offsets[g]);
    });
    columns.forEach((col, c) => {
      const nulls = meta.row_groups.reduce((s, rg) => s + Number(rg.columns[c].meta_data.statistics.null_count), 0);
      assert.equal(nulls, metrics.columns[c].null_count, `${col.name} null_count`);
    });

    const got = await parquetReadObjects({ file, compressors, utf8: false });
    assert.equal(got.length, rows.length);
    for (let r = 0; r < rows.length; r++) {
      columns.forEach((col, c) => {
        let have = got[r][col.name];
        if (col.type === 'string' && have instanceof Uint8Array) have = Buffer.from(have).toString('utf8');
        assert.ok(same(col, have, rows[r][c]), `row ${r} ${col.name}: ${have} vs ${rows[r][c]}`);
      });
    }
  });
}
