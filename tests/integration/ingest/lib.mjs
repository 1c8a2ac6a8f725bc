// Helpers for the `floe ingest` suite (tests/integration/ingest/).
//
// Builds on ../lib/harness.mjs (throwaway PostgreSQL, `floe serve`) and
// ../tables/lib.mjs (schema-validated REST calls).  What it adds:
// - a catalog per test file: fresh database, a running `floe serve`, one
//   namespace; `ingest()` runs `floe ingest` against it in process (the same
//   --database-url and default warehouse) or through --catalog-uri;
// - exact JSON: snapshot ids are 63-bit, so integer literals of 16+ digits are
//   parsed as strings (compare ids with String());
// - readers for what a snapshot points at: manifest lists and manifests with
//   Debian python3-avro (../write-path/read_avro.py), data files with DuckDB;
// - an Iceberg type model for tests that generate rows: per type the CSV text
//   and JSON value of a source value and its canonical form (the comparable
//   forms of ../write-path/samples.mjs), and the DuckDB projection that gives
//   the same form back.
// Nothing here interprets floe's answers beyond parsing: assertions belong to
// the tests.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { freshDatabase, startFloe, request, tmpDir, floeBin } from '../lib/harness.mjs';
import { readAvroPython } from '../lib/pyavro.mjs';
import { call, createNamespace, tablePath, encodeNs } from '../tables/lib.mjs';

export { tmpDir };

// A seeded random number generator in [0, 1) (mulberry32), so that a
// failure's random delays can be replayed from the seed it prints.
export function seededRandom(seed) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- exact JSON ----

// JSON.parse, except that integer literals of 16 or more digits (which a double
// may not hold exactly) become strings.
export function parseJsonBig(text) {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
      const lit = m[0];
      const digits = lit.replace('-', '').length;
      out += !m[1] && !m[2] && digits >= 16 ? `"${lit}"` : lit;
      i += lit.length;
    } else {
      out += c;
      i += 1;
    }
  }
  return JSON.parse(out);
}

// ---- the catalog ----

// A fresh database, `floe serve` on it, namespace `ns`.
export async function startCatalog(tag, { namespace = ['ns'] } = {}) {
  const db = await freshDatabase(tag);
  const floe = await startFloe({ databaseUrl: db.url });
  const cfg = await call(floe.baseUrl, 'GET', '/v1/config?warehouse=default', { expect: 200 });
  const p = `/v1/${encodeURIComponent(cfg.json.overrides.prefix)}`;
  await createNamespace(floe.baseUrl, p, namespace);
  return { floe, base: floe.baseUrl, p, dbUrl: db.url, ns: namespace, dataDir: floe.dataDir };
}

// Creates ns.name with an explicit schema (fields: [{id, name, type, required}]).
export async function createTable(ctx, name, fields, properties = {}) {
  const res = await call(ctx.base, 'POST', `${ctx.p}/namespaces/${encodeNs(ctx.ns)}/tables`, {
    body: { name, schema: { type: 'struct', 'schema-id': 0, fields }, properties },
    expect: 200,
  });
  return parseJsonBig(res.text);
}

// loadTable through REST (validated), parsed exactly; null for 404.
export async function loadTable(ctx, name) {
  const res = await call(ctx.base, 'GET', tablePath(ctx.p, ctx.ns, name), { expect: [200, 404] });
  return res.status === 404 ? null : parseJsonBig(res.text);
}

export const tableExists = async (ctx, name) => (await loadTable(ctx, name)) !== null;

// Runs `floe ingest --table ns.name ... files` (in process unless rest) and
// resolves {code, signal, out (the parsed JSON line or null), stdout, stderr}.
// onSpawn(proc) lets a test kill it.
// wrap: a command line that runs floe (e.g. ['strace', '-o', file, '--']).
export function ingest(ctx, name, files, { rest = false, args = [], onSpawn, env = {}, wrap = [] } = {}) {
  const argv = ['ingest', '--table', [...ctx.ns, name].join('.')];
  if (rest) argv.push('--catalog-uri', ctx.base);
  else argv.push('--database-url', ctx.dbUrl);
  argv.push('--log-level', 'error', ...args, ...files);
  const childEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FLOE_')) childEnv[k] = v;
  const [bin, ...pre] = [...wrap, floeBin];
  const proc = spawn(bin, [...pre, ...argv], { env: { ...childEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  if (onSpawn) onSpawn(proc);
  return new Promise((resolve, reject) => {
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      const line = stdout.trim().split('\n').filter(Boolean).at(-1);
      let out = null;
      try {
        out = line ? parseJsonBig(line) : null;
      } catch {
        out = null;
      }
      resolve({ code, signal, out, stdout, stderr, cmd: `floe ${argv.join(' ')}` });
    });
  });
}

// A one-line description of an ingest result for assertion messages.
export const show = (r) => `${r.cmd}\n -> exit ${r.code}${r.signal ? ` (${r.signal})` : ''}\n stdout: ${r.stdout.trim()}\n stderr: ${r.stderr.trim().slice(0, 800)}`;

// ---- files of a table ----

export const localPath = (uri) => decodeURI(new URL(uri).pathname);

// Reads an Avro file with python3-avro: {meta, records}, integers as decimal
// strings, bytes as upper-case hex (read_avro.py's form).
export function readAvro(uri) {
  return readAvroPython(localPath(uri));
}

export const mapOf = (arr) => (arr == null ? null : Object.fromEntries(arr.map((e) => [String(e.key), e.value])));

// The snapshot of `meta` with id `id` (compared as strings).
export const snapshotById = (meta, id) => meta.snapshots.find((s) => String(s['snapshot-id']) === String(id));
export const currentSnapshot = (meta) => (meta['current-snapshot-id'] == null || String(meta['current-snapshot-id']) === '-1'
  ? null : snapshotById(meta, meta['current-snapshot-id']));

// Every data file of a snapshot: [{manifestPath, listEntry, manifestMeta, entry, file}], in
// manifest list order, then manifest order.
export function snapshotFiles(snapshot) {
  const list = readAvro(snapshot['manifest-list']);
  const out = [];
  for (const le of list.records) {
    const m = readAvro(le.manifest_path);
    for (const e of m.records) {
      out.push({ listMeta: list.meta, listEntry: le, manifestMeta: m.meta, entry: e, file: e.data_file });
    }
  }
  return out;
}

// Every *.parquet file under the table's data folder.
export function parquetOnDisk(meta) {
  const dir = path.join(localPath(meta.location), 'data');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => f.endsWith('.parquet')).map((f) => path.join(dir, f)).sort();
}

// ---- DuckDB ----

let duckCon;
export async function duck() {
  if (!duckCon) {
    const db = await DuckDBInstance.create(':memory:');
    duckCon = await db.connect();
    await duckCon.run("SET TimeZone = 'UTC'");
  }
  return duckCon;
}

export const sqlStr = (s) => `'${String(s).replaceAll("'", "''")}'`;

// ---- the type model ----

// Iceberg type -> comparison kind of ../write-path/samples.mjs (compare/minMax/decodeBound).
export function kindOf(type) {
  if (type === 'boolean') return 'bool';
  if (type === 'int' || type === 'date') return 'int';
  if (['long', 'time', 'timestamp', 'timestamptz'].includes(type)) return 'bigint';
  if (type === 'float' || type === 'double') return 'float';
  if (type.startsWith('decimal')) return 'decimal';
  if (type === 'string') return 'string';
  return 'bytes'; // uuid, fixed[L], binary
}

export const decimalScale = (type) => Number(/decimal\(\s*\d+\s*,\s*(\d+)\s*\)/.exec(type)[1]);

// DuckDB expression giving column `c` (quoted here) of `type` in a form toCanon() takes.
export function duckProjection(name, type) {
  const c = `"${name.replaceAll('"', '""')}"`;
  if (type === 'long' || type.startsWith('decimal') || type === 'uuid') return `${c}::VARCHAR`;
  if (type === 'date') return `(${c} - DATE '1970-01-01')::VARCHAR`;
  if (type === 'time') {
    return `(EXTRACT(hour FROM ${c})::BIGINT * 3600000000 + EXTRACT(minute FROM ${c})::BIGINT * 60000000 + EXTRACT(microsecond FROM ${c})::BIGINT)::VARCHAR`;
  }
  if (type === 'timestamp' || type === 'timestamptz') return `epoch_us(${c})::VARCHAR`;
  if (type === 'binary' || type.startsWith('fixed')) return `hex(${c})`;
  return c;
}

// A value DuckDB returned through duckProjection (getRows()) -> canonical form.
export function duckToCanon(type, v) {
  if (v === null || v === undefined) return null;
  switch (kindOf(type)) {
    case 'bool': return v ? 1 : 0;
    case 'int': return Number(v);
    case 'bigint': return BigInt(String(v));
    case 'float': return Number(v);
    case 'decimal': return unscaled(String(v), decimalScale(type));
    case 'string': return Buffer.from(String(v), 'utf8');
    default: return type === 'uuid' ? Buffer.from(String(v).replaceAll('-', ''), 'hex') : Buffer.from(String(v), 'hex');
  }
}

// "-12.5" at scale 2 -> -1250n (exact; throws when it does not fit the scale).
export function unscaled(text, scale) {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!m) throw new Error(`not a decimal: ${text}`);
  const frac = (m[3] ?? '').padEnd(scale, '0');
  if (frac.length > scale) throw new Error(`${text} has more than ${scale} fractional digits`);
  const v = BigInt((m[2] || '0') + frac);
  return m[1] === '-' ? -v : v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
export function daysFromCivil(y, m, d) {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

export function civilFromDays(z) {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

const pad = (n, w = 2) => String(n).padStart(w, '0');
export const dateText = (days) => {
  const [y, m, d] = civilFromDays(days);
  return `${pad(y, 4)}-${pad(m)}-${pad(d)}`;
};
export const timeText = (us) => {
  const u = BigInt(us);
  const s = u / 1000000n;
  const f = u % 1000000n;
  return `${pad(Number(s / 3600n))}:${pad(Number((s / 60n) % 60n))}:${pad(Number(s % 60n))}${f ? `.${pad(Number(f), 6)}` : ''}`;
};
// microseconds since the epoch -> "YYYY-MM-DDTHH:MM:SS[.ffffff]"
export const timestampText = (us, sep = 'T') => {
  const u = BigInt(us);
  const day = 86400000000n;
  let days = u / day;
  let rest = u % day;
  if (rest < 0n) {
    rest += day;
    days -= 1n;
  }
  return `${dateText(Number(days))}${sep}${timeText(rest)}`;
};

// CSV field text for a string (always quoted when it must be, or when asked).
export function csvField(s, forceQuote = false) {
  if (s === null) return '';
  if (forceQuote || s === '' || /[",\r\n]/.test(s)) return `"${s.replaceAll('"', '""')}"`;
  return s;
}
