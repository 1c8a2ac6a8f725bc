// Helpers for the S3 suite (tests/integration/s3/): a moto_server with signature
// checks (../lib/moto.mjs), `floe serve` whose environment holds the keys, an s3
// warehouse created through the management API, and a mirror of a table's objects
// on the local disk for the independent readers (python3-avro for manifests,
// DuckDB for Parquet).
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startMoto, NO_S3 } from '../lib/moto.mjs';
import { freshDatabase, startFloe, request, tmpDir, floeBin } from '../lib/harness.mjs';
import { parseJsonBig } from '../ingest/lib.mjs';

export const AK_ENV = 'FLOE_TEST_S3_AK';
export const SK_ENV = 'FLOE_TEST_S3_SK';

// The storage profile of a warehouse in bucket/prefix on moto (path style, keys
// through the two environment variables above).
export function s3Profile(s3, bucket, prefix, extra = {}) {
  return {
    type: 's3',
    location: `s3://${bucket}/${prefix}`,
    endpoint: s3.endpoint,
    region: 'us-east-1',
    'path-style-access': true,
    'access-key-id-env': AK_ENV,
    'secret-access-key-env': SK_ENV,
    ...extra,
  };
}

// moto + a fresh database + floe serve with the keys in its environment; null when
// moto_server is absent (the caller skips).  ctx.stop() ends both.
export async function startS3Catalog(tag, { bucket = 'lake', floeEnv = {} } = {}) {
  const s3 = await startMoto({ tag });
  if (!s3) return null;
  await s3.createBucket(bucket);
  const db = await freshDatabase(tag);
  const env = { [AK_ENV]: s3.accessKeyId, [SK_ENV]: s3.secretAccessKey, ...floeEnv };
  const floe = await startFloe({ databaseUrl: db.url, env });
  return {
    s3,
    floe,
    base: floe.baseUrl,
    dbUrl: db.url,
    bucket,
    env,
    async stop() {
      await floe.stop();
      await s3.stop();
    },
  };
}

// True (and the test skipped with "skipped: no S3 server") when ctx is null.
export function noS3(ctx, t) {
  if (ctx) return false;
  t.skip(NO_S3);
  return true;
}

// POST /management/v1/warehouses; returns the response.
export function createWarehouse(base, name, profile) {
  return request(base, 'POST', '/management/v1/warehouses', { body: { name, 'storage-profile': profile } });
}

// Downloads every object under s3://bucket/prefix into dir/<key>; returns the keys.
export async function mirror(s3, bucket, prefix, dir) {
  const objs = await s3.list(bucket, prefix);
  for (const o of objs) {
    const p = path.join(dir, o.key);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, await s3.get(bucket, o.key));
  }
  return objs.map((o) => o.key);
}

// The local path of an s3:// URI inside a mirror made by mirror().
export const mirrored = (dir, uri) => {
  const u = /^s3:\/\/[^/]+\/(.*)$/.exec(uri);
  if (!u) throw new Error(`not an s3 URI: ${uri}`);
  return path.join(dir, u[1]);
};

// Polls fn until it returns a truthy value or timeoutMs passes; returns the value.
export async function eventually(fn, timeoutMs = 20000, stepMs = 200) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export { tmpDir };

// Runs `floe ingest --warehouse WH --database-url … --table ns.TABLE FILES` in process
// with the keys in its environment (asynchronously: a fault proxy in this process must
// keep serving).  onSpawn(proc) may kill it.  Resolves {code, signal, out (the JSON
// line or null), stdout, stderr}.
export function ingestInto(ctx, wh, table, files, { args = [], onSpawn } = {}) {
  const argv = ['ingest', '--warehouse', wh, '--database-url', ctx.dbUrl, '--table', `ns.${table}`,
    '--log-level', 'error', ...args, ...files];
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FLOE_')) env[k] = v;
  Object.assign(env, ctx.env);
  const proc = spawn(floeBin, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  if (onSpawn) onSpawn(proc);
  return new Promise((resolve) => proc.on('close', (code, signal) => {
    const line = stdout.trim().split('\n').filter(Boolean).at(-1);
    let out = null;
    try { out = line ? parseJsonBig(line) : null; } catch { out = null; }
    resolve({ code, signal, out, stdout, stderr });
  }));
}
