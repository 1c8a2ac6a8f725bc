// The sample files that tests/unit/storage/write_samples (built from the C
// write path in storage/) produces, and independent helpers to interpret
// them: Iceberg single-value serialization (spec Appendix D) and truncate(16)
// written here from the spec, not from the C code.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../lib/paths.mjs';

export const buildDir = path.resolve(repoRoot, process.env.FLOE_BUILD_DIR ?? 'build');
export const writerBin = path.join(buildDir, 'tests', 'unit', 'storage', 'write_samples');

// Writes every sample into a fresh directory; returns it and a cleanup.  With
// tableUrl it also writes a whole table under dir/table whose files refer to
// each other through that URL.
export function writeSamples(tableUrl) {
  if (!existsSync(writerBin)) {
    throw new Error(`${writerBin} is missing: build it (meson compile -C ${buildDir}) or set FLOE_BUILD_DIR`);
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'floe-write-path-'));
  execFileSync(writerBin, tableUrl ? [dir, tableUrl] : [dir], { stdio: ['ignore', 'inherit', 'inherit'] });
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const readJson = (dir, name) => JSON.parse(readFileSync(path.join(dir, name), 'utf8'));

export const parquetSamples = ['types_zstd', 'types_snappy', 'types_gzip', 'types_none', 'types_plain',
  'types_required', 'types_empty'];

// Column name, Iceberg field id, Iceberg type, and how values compare.
export const columns = [
  ['c_bool', 1, 'boolean', 'bool'],
  ['c_int', 2, 'int', 'int'],
  ['c_long', 3, 'long', 'bigint'],
  ['c_float', 4, 'float', 'float'],
  ['c_double', 5, 'double', 'float'],
  ['c_dec9', 6, 'decimal(9, 2)', 'decimal'],
  ['c_dec18', 7, 'decimal(18, 4)', 'decimal'],
  ['c_dec38', 8, 'decimal(38, 10)', 'decimal'],
  ['c_date', 9, 'date', 'int'],
  ['c_time', 10, 'time', 'bigint'],
  ['c_ts', 11, 'timestamp', 'bigint'],
  ['c_tstz', 12, 'timestamptz', 'bigint'],
  ['c_string', 13, 'string', 'string'],
  ['c_uuid', 14, 'uuid', 'bytes'],
  ['c_fixed', 15, 'fixed[5]', 'bytes'],
  ['c_binary', 16, 'binary', 'bytes'],
  ['c_id', 17, 'long', 'bigint'],
  ['c_ts_ns', 18, 'timestamp_ns', 'bigint'],
  ['c_tstz_ns', 19, 'timestamptz_ns', 'bigint'],
].map(([name, id, type, kind]) => ({ name, id, type, kind }));

// Source values (rows.json forms) as comparable JS values.
export function canon(kind, v) {
  if (v === null) return null;
  switch (kind) {
    case 'bool': return v ? 1 : 0;
    case 'int': return Number(v);
    case 'bigint': return BigInt(v);
    case 'float': return v === 'NaN' ? NaN : Number(v);
    case 'decimal': return BigInt(String(v).replace('.', ''));
    case 'string': return Buffer.from(v, 'utf8');
    case 'bytes': return Buffer.from(String(v).replace(/-/g, ''), 'hex');
    default: throw new Error(kind);
  }
}

export function compare(kind, a, b) {
  switch (kind) {
    case 'string':
    case 'bytes': return Buffer.compare(a, b);
    case 'float':
      if (a < b) return -1;
      if (a > b) return 1;
      // equal: -0 sorts before +0 (Iceberg spec, "Bounds")
      return (Object.is(a, -0) ? 0 : 1) - (Object.is(b, -0) ? 0 : 1);
    default: return a < b ? -1 : a > b ? 1 : 0;
  }
}

// Min and max of the non-null, non-NaN values.
export function minMax(kind, values) {
  let min = null;
  let max = null;
  for (const v of values) {
    if (v === null || (kind === 'float' && Number.isNaN(v))) continue;
    if (min === null || compare(kind, v, min) < 0) min = v;
    if (max === null || compare(kind, v, max) > 0) max = v;
  }
  return { min, max };
}

// Appendix D decoding of a bound, to the canon() form of its type.
export function decodeBound(col, hex) {
  const b = Buffer.from(hex, 'hex');
  switch (col.type) {
    case 'boolean': return b[0] ? 1 : 0;
    case 'int':
    case 'date': assertLen(b, 4); return b.readInt32LE(0);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns': assertLen(b, 8); return b.readBigInt64LE(0);
    case 'float': assertLen(b, 4); return b.readFloatLE(0);
    case 'double': assertLen(b, 8); return b.readDoubleLE(0);
    case 'string':
    case 'uuid':
    case 'binary': return b;
    default:
      if (col.type.startsWith('fixed')) return b;
      if (col.type.startsWith('decimal')) {
        // minimal big-endian two's complement
        let x = 0n;
        for (const byte of b) x = (x << 8n) | BigInt(byte);
        if (b.length && b[0] & 0x80) x -= 1n << BigInt(8 * b.length);
        return x;
      }
      throw new Error(col.type);
  }
}

function assertLen(b, n) {
  if (b.length !== n) throw new Error(`bound of ${b.length} bytes, expected ${n}`);
}

// truncate(16) per the Iceberg spec: strings by code points, binary by bytes;
// upper bounds round up, or do not exist.
export function truncateLower(col, v) {
  if (col.type === 'string') return Buffer.from(Array.from(v.toString('utf8')).slice(0, 16).join(''), 'utf8');
  if (col.type === 'binary') return v.subarray(0, 16);
  return v;
}

export function truncateUpper(col, v) {
  if (col.type === 'string') {
    const cps = Array.from(v.toString('utf8')).map((c) => c.codePointAt(0));
    if (cps.length <= 16) return v;
    const kept = cps.slice(0, 16);
    for (let i = 15; i >= 0; i--) {
      if (kept[i] === 0x10ffff) continue;
      const next = kept[i] === 0xd7ff ? 0xe000 : kept[i] + 1;
      return Buffer.from(String.fromCodePoint(...kept.slice(0, i), next), 'utf8');
    }
    return null;
  }
  if (col.type === 'binary') {
    if (v.length <= 16) return v;
    for (let i = 15; i >= 0; i--) {
      if (v[i] !== 0xff) return Buffer.concat([v.subarray(0, i), Buffer.from([v[i] + 1])]);
    }
    return null;
  }
  return v;
}
