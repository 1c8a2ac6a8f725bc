// Helper of maintenance_bench.sh: the live files of a table, a DuckDB scan over them, and
// DuckDB rewriting them (the compaction peer).
//
//   node maintenance_bench.mjs files META.json OUT.json  live data files of the current snapshot
//   node maintenance_bench.mjs scan FILES.json [REPEAT=3]  best of REPEAT scans (after a warm-up)
//   node maintenance_bench.mjs rewrite FILES.json OUT.parquet [THREADS=1]
//
// META.json is a loadTable response.  scan runs `SELECT count(*), sum(hash(COLUMNS(*)))` over
// read_parquet([files]) (every column read); rewrite runs `COPY (SELECT * FROM
// read_parquet([files])) TO OUT (FORMAT parquet, COMPRESSION zstd)`.  Each prints one JSON
// line.  avsc and @duckdb/node-api come from tests/integration/node_modules (`npm ci`
// there), or from FLOE_DUCKDB_MODULES.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.FLOE_DUCKDB_MODULES ?? path.join(here, '..', 'integration', 'node_modules');
const require = createRequire(path.join(modules, 'noop.js'));
const q = (s) => `'${s.replaceAll("'", "''")}'`;
const local = (uri) => decodeURI(new URL(uri).pathname);

// Longs as BigInt (snapshot ids use all 63 bits), with the tests' own type.
async function readAvro(file) {
  const avro = require('avsc');
  const { bigLong } = await import(pathToFileURL(path.join(here, '..', 'integration', 'lib', 'avro.mjs')));
  return new Promise((resolve, reject) => {
    const out = [];
    avro.createFileDecoder(file, {
      parseHook: (s) => avro.Type.forSchema(s, { wrapUnions: false, registry: { long: bigLong } }),
    })
      .on('data', (r) => out.push(r)).on('error', reject).on('end', () => resolve(out));
  });
}

async function files(metaFile, outFile) {
  const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8')).metadata;
  const cur = meta.snapshots.find((s) => String(s['snapshot-id']) === String(meta['current-snapshot-id']));
  const out = [];
  let manifests = 0;
  for (const m of await readAvro(local(cur['manifest-list']))) {
    manifests++;
    for (const e of await readAvro(local(m.manifest_path))) {
      if (e.status !== 2) out.push({ path: local(e.data_file.file_path), bytes: Number(e.data_file.file_size_in_bytes) });
    }
  }
  fs.writeFileSync(outFile, JSON.stringify(out));
  console.log(JSON.stringify({ files: out.length, bytes: out.reduce((a, f) => a + f.bytes, 0), manifests,
    snapshots: meta.snapshots.length }));
}

async function duck(threads) {
  const { DuckDBInstance } = require('@duckdb/node-api');
  const con = await (await DuckDBInstance.create(':memory:')).connect();
  await con.run(`SET threads = ${threads}`);
  return con;
}

const list = (filesFile) => `[${JSON.parse(fs.readFileSync(filesFile, 'utf8')).map((f) => q(f.path)).join(', ')}]`;

async function scan(filesFile, repeat = 3) {
  const con = await duck(1);
  const sql = `SELECT count(*), sum(hash(COLUMNS(*))) FROM read_parquet(${list(filesFile)})`;
  let best = Infinity;
  let rows = 0;
  await con.runAndReadAll(sql); // warm-up: file cache and DuckDB's metadata reads
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint();
    const r = await con.runAndReadAll(sql);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    rows = Number(r.getRows()[0][0]);
  }
  console.log(JSON.stringify({ seconds: best, rows, threads: 1 }));
}

async function rewrite(filesFile, out, threads = 1) {
  const con = await duck(threads);
  const bytesIn = JSON.parse(fs.readFileSync(filesFile, 'utf8')).reduce((a, f) => a + f.bytes, 0);
  fs.rmSync(out, { force: true });
  const t0 = process.hrtime.bigint();
  const r = await con.runAndReadAll(`COPY (SELECT * FROM read_parquet(${list(filesFile)})) TO ${q(out)} (FORMAT parquet, COMPRESSION zstd)`);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(JSON.stringify({ seconds, rows: Number(r.getRows()[0]?.[0] ?? -1), bytes_in: bytesIn,
    bytes_out: fs.statSync(out).size, threads: Number(threads) }));
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'files') await files(...args);
else if (cmd === 'scan') await scan(args[0], Number(args[1] ?? 3));
else if (cmd === 'rewrite') await rewrite(args[0], args[1], Number(args[2] ?? 1));
else {
  console.error('usage: node maintenance_bench.mjs files|scan|rewrite ...');
  process.exit(2);
}
