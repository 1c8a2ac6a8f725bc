// The ingest peer: DuckDB turning a CSV file into one zstd Parquet file, timed in process.
//
//   node duckdb_copy.mjs IN.csv OUT.parquet [THREADS=1]
//
// Runs `SET threads = N; COPY (SELECT * FROM read_csv(IN)) TO OUT (FORMAT parquet,
// COMPRESSION zstd)` (shared/bench/README.md) and prints one JSON line:
// {seconds, rows, bytes_in, bytes_out, threads, duckdb}. The clock covers the COPY only
// (the in-memory database is opened before it). @duckdb/node-api comes from
// tests/integration/node_modules (`npm ci` there), or from FLOE_DUCKDB_MODULES.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.FLOE_DUCKDB_MODULES ?? path.join(here, '..', 'integration', 'node_modules');
const require = createRequire(path.join(modules, 'noop.js'));
const { DuckDBInstance } = require('@duckdb/node-api');

const [input, output, threadsArg] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node duckdb_copy.mjs IN.csv OUT.parquet [THREADS]');
  process.exit(2);
}
const threads = Number(threadsArg ?? 1);
const q = (s) => `'${s.replaceAll("'", "''")}'`;

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run(`SET threads = ${threads}`);
const version = (await (await con.runAndReadAll('SELECT version()')).getRows())[0][0];
fs.rmSync(output, { force: true });
const t0 = process.hrtime.bigint();
const res = await con.runAndReadAll(
  `COPY (SELECT * FROM read_csv(${q(input)})) TO ${q(output)} (FORMAT parquet, COMPRESSION zstd)`,
);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const rows = Number(res.getRows()[0]?.[0] ?? -1);
console.log(
  JSON.stringify({
    seconds,
    rows,
    bytes_in: fs.statSync(input).size,
    bytes_out: fs.statSync(output).size,
    threads,
    duckdb: String(version),
  }),
);
