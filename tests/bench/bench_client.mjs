// Load generator and setup client for the Floe benchmarks (node >= 20, no dependencies).
//
//   node bench_client.mjs create-tables --base URL --p /v1/PREFIX --ns NS --count N
//        [--name-prefix t] [--target-bytes B] [--concurrency 8]
//     Creates namespace NS (if missing) and tables NS.t0 .. NS.t{N-1}. With --target-bytes
//     the tables carry as many properties as make a loadTable body of about B bytes (measured
//     on a probe table first). Prints one JSON line: {created, seconds, properties, load_bytes}.
//
//   node bench_client.mjs commit --base URL --p /v1/PREFIX --ns NS --tables N
//        [--name-prefix t] [--clients 16] [--duration 15] [--idempotency 1]
//     PyIceberg-style appends: each client POSTs a CommitTableRequest with
//     assert-ref-snapshot-id(main) + assert-table-uuid, add-snapshot (sequence-number = last + 1,
//     parent = current, a manifest-list path that need not exist) and set-snapshot-ref main.
//     On 409 it reloads the table (GET) and retries at once with the same snapshot id.
//     Client k appends to tables k, k+C, k+2C, ... in turn (C = clients), so with N >= C the
//     clients never share a table; with N = 1 all of them race on one hot table. Each client
//     keeps its own view of its tables, updated from its own successful commits, as a
//     separate writer process would. Every attempt carries a fresh UUIDv7 Idempotency-Key
//     unless --idempotency 0. Only commits acknowledged (200) before the deadline count.
//     Prints one JSON line with commits, commits/s, conflicts, errors, latencies, the most
//     requests in flight at once (shows the clients really ran concurrently) and the
//     generator's own CPU use (it shares the cores with the server).
//
//   node bench_client.mjs grow --base URL --p /v1/PREFIX --ns NS --snapshots N [--name-prefix t]
//     Appends to NS.t0, one commit at a time (the same request as `commit`), until the table
//     has N snapshots: a table as large as a hot one becomes after N commits, to measure
//     commits on it. Prints one JSON line: {snapshots, load_bytes, seconds}.
import http from 'node:http';
import crypto from 'node:crypto';

function parseArgs(argv) {
  const o = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) o[a.slice(2, eq)] = a.slice(eq + 1);
      else o[a.slice(2)] = argv[++i];
    } else o._.push(a);
  }
  return o;
}

const args = parseArgs(process.argv.slice(2));
const cmd = args._[0];
const base = new URL(args.base ?? 'http://127.0.0.1:8181');
const P = args.p ?? '/v1';
const ns = args.ns ?? 'bench';
const namePrefix = args['name-prefix'] ?? 't';
const clients = Number(args.clients ?? 16);
const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(clients, Number(args.concurrency ?? 8)) });

let inFlight = 0;
let maxInFlight = 0;

// One HTTP request; resolves {status, body (string, or null when drop), ms}.
function request(method, path, { body, headers = {}, drop = false } = {}) {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const h = { Accept: 'application/json', ...headers };
  if (payload) {
    h['Content-Type'] = 'application/json';
    h['Content-Length'] = payload.length;
  }
  const t0 = process.hrtime.bigint();
  inFlight++;
  if (inFlight > maxInFlight) maxInFlight = inFlight;
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: base.hostname, port: base.port, method, path, headers: h, agent },
      (res) => {
        const chunks = [];
        let bytes = 0;
        res.on('data', (c) => {
          bytes += c.length;
          if (!drop || res.statusCode !== 200) chunks.push(c);
        });
        res.on('end', () => {
          inFlight--;
          resolve({
            status: res.statusCode,
            body: drop && res.statusCode === 200 ? null : Buffer.concat(chunks).toString('utf8'),
            bytes,
            ms: Number(process.hrtime.bigint() - t0) / 1e6,
          });
        });
        res.on('error', (e) => {
          inFlight--;
          reject(e);
        });
      },
    );
    req.on('error', (e) => {
      inFlight--;
      reject(e);
    });
    if (payload) req.write(payload);
    req.end();
  });
}

const enc = (s) => encodeURIComponent(s);
const tablePath = (name) => `${P}/namespaces/${enc(ns)}/tables/${enc(name)}`;

function uuidv7() {
  const b = crypto.randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// Snapshot ids below 2^53 so JSON numbers stay exact in every client.
const newSnapshotId = () => crypto.randomInt(1, 2 ** 47) * 64 + crypto.randomInt(0, 64);

function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function fail(msg) {
  console.error(`bench_client: ${msg}`);
  process.exit(1);
}

function createBody(name, properties) {
  return {
    name,
    schema: {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', type: 'long', required: true },
        { id: 2, name: 'data', type: 'string', required: false },
        { id: 3, name: 'ts', type: 'timestamp', required: false },
      ],
    },
    'partition-spec': { 'spec-id': 0, fields: [] },
    'write-order': { 'order-id': 0, fields: [] },
    'stage-create': false,
    properties,
  };
}

function propsOf(count) {
  const p = {};
  for (let i = 0; i < count; i++) p[`bench.prop.${String(i).padStart(4, '0')}`] = `value-${String(i * 7919).padStart(8, '0')}`;
  return p;
}

async function createTables() {
  const count = Number(args.count ?? 1);
  const conc = Number(args.concurrency ?? 8);
  const target = Number(args['target-bytes'] ?? 0);
  const t0 = Date.now();
  let r = await request('POST', `${P}/namespaces`, { body: { namespace: [ns], properties: {} } });
  if (r.status !== 200 && r.status !== 409) fail(`create namespace: ${r.status} ${r.body}`);
  let nprops = 0;
  if (target > 0) {
    // One property adds the same bytes to every table: measure the rest on a probe.
    const probe = `${namePrefix}_probe`;
    r = await request('POST', `${P}/namespaces/${enc(ns)}/tables`, { body: createBody(probe, {}) });
    if (r.status !== 200) fail(`create ${probe}: ${r.status} ${r.body}`);
    r = await request('GET', tablePath(probe));
    const per = JSON.stringify(propsOf(2)).length - JSON.stringify(propsOf(1)).length;
    nprops = Math.max(0, Math.floor((target - r.bytes) / per));
  }
  const properties = propsOf(nprops);
  let next = 0;
  let created = 0;
  async function worker() {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const name = `${namePrefix}${i}`;
      const res = await request('POST', `${P}/namespaces/${enc(ns)}/tables`, {
        body: createBody(name, properties),
        headers: { 'Idempotency-Key': uuidv7() },
        drop: true,
      });
      if (res.status !== 200) fail(`create ${name}: ${res.status} ${res.body?.slice(0, 300)}`);
      created++;
    }
  }
  await Promise.all(Array.from({ length: conc }, worker));
  r = await request('GET', tablePath(`${namePrefix}0`));
  if (r.status !== 200) fail(`load ${namePrefix}0: ${r.status}`);
  console.log(JSON.stringify({ created, seconds: (Date.now() - t0) / 1000, properties: nprops, load_bytes: r.bytes }));
}

function commitBody(name, st, sid) {
  return {
    identifier: { namespace: [ns], name },
    requirements: [
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': st.current },
      { type: 'assert-table-uuid', uuid: st.uuid },
    ],
    updates: [
      {
        action: 'add-snapshot',
        snapshot: {
          'snapshot-id': sid,
          ...(st.current === null ? {} : { 'parent-snapshot-id': st.current }),
          'sequence-number': st.lastSeq + 1,
          'timestamp-ms': Date.now(),
          'manifest-list': `${st.location}/metadata/snap-${sid}-0-${crypto.randomUUID()}.avro`,
          summary: { operation: 'append', 'added-data-files': '1', 'added-records': '1', 'added-files-size': '1024' },
          'schema-id': st.schemaId,
        },
      },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': sid },
    ],
  };
}

async function loadState(name) {
  const r = await request('GET', tablePath(name));
  if (r.status !== 200) throw new Error(`load ${name}: ${r.status} ${r.body?.slice(0, 300)}`);
  const m = JSON.parse(r.body).metadata;
  const cur = m['current-snapshot-id'];
  return {
    uuid: m['table-uuid'],
    current: cur === undefined || cur === null || cur === -1 ? null : cur,
    lastSeq: m['last-sequence-number'] ?? 0,
    location: m.location,
    schemaId: m['current-schema-id'],
    bytes: r.bytes,
    snapshots: (m.snapshots ?? []).length,
  };
}

async function commit() {
  const ntables = Number(args.tables ?? 1);
  const duration = Number(args.duration ?? 15) * 1000;
  const idem = String(args.idempotency ?? '1') !== '0';
  const names = Array.from({ length: ntables }, (_, i) => `${namePrefix}${i}`);
  // Each client's own view of its tables, loaded before the clock starts.
  const views = [];
  for (let k = 0; k < clients; k++) {
    const own = ntables >= clients ? names.filter((_, i) => i % clients === k) : names;
    const m = new Map();
    for (const n of own) m.set(n, await loadState(n));
    views.push({ own, m, next: 0 });
  }
  const stats = { commits: 0, attempts: 0, conflicts: 0, errors: 0, reloads: 0, errorSamples: [] };
  const commitMs = [];
  const postMs = [];
  const perSecond = new Array(Math.ceil(duration / 1000)).fill(0);
  maxInFlight = 0;
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  const deadline = t0 + duration;

  async function client(k) {
    const v = views[k];
    while (Date.now() < deadline) {
      const name = v.own[v.next++ % v.own.length];
      let st = v.m.get(name);
      const sid = newSnapshotId();
      const start = process.hrtime.bigint();
      for (;;) {
        if (Date.now() >= deadline) break;
        const headers = idem ? { 'Idempotency-Key': uuidv7() } : {};
        stats.attempts++;
        let r;
        try {
          r = await request('POST', tablePath(name), { body: commitBody(name, st, sid), headers, drop: true });
        } catch (e) {
          stats.errors++;
          if (stats.errorSamples.length < 5) stats.errorSamples.push(String(e.message || e));
          break;
        }
        postMs.push(r.ms);
        if (r.status === 200) {
          const done = Date.now();
          if (done <= deadline) {
            stats.commits++;
            commitMs.push(Number(process.hrtime.bigint() - start) / 1e6);
            perSecond[Math.min(perSecond.length - 1, Math.floor((done - t0) / 1000))]++;
          }
          st = { ...st, current: sid, lastSeq: st.lastSeq + 1 };
          v.m.set(name, st);
          break;
        }
        if (r.status === 409) stats.conflicts++;
        else {
          stats.errors++;
          if (stats.errorSamples.length < 5) stats.errorSamples.push(`${r.status} ${r.body?.slice(0, 200)}`);
        }
        stats.reloads++;
        st = await loadState(name);
        v.m.set(name, st);
        if (r.status !== 409) break;
      }
    }
  }
  await Promise.all(Array.from({ length: clients }, (_, k) => client(k)));
  const wall = (Date.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  commitMs.sort((a, b) => a - b);
  postMs.sort((a, b) => a - b);
  const last = await loadState(names[0]);
  console.log(
    JSON.stringify({
      tables: ntables,
      clients,
      idempotency_key: idem,
      duration_s: duration / 1000,
      commits: stats.commits,
      commits_per_s: stats.commits / (duration / 1000),
      attempts: stats.attempts,
      conflicts: stats.conflicts,
      errors: stats.errors,
      error_samples: stats.errorSamples,
      commit_p50_ms: percentile(commitMs, 50),
      commit_p99_ms: percentile(commitMs, 99),
      post_p50_ms: percentile(postMs, 50),
      post_p99_ms: percentile(postMs, 99),
      max_in_flight: maxInFlight,
      per_second: perSecond,
      generator_cpu_pct: (100 * (cpu.user + cpu.system)) / 1e6 / wall,
      first_table_snapshots: last.snapshots,
      first_table_load_bytes: last.bytes,
    }),
  );
}

async function grow() {
  const want = Number(args.snapshots ?? 0);
  const name = `${namePrefix}0`;
  const t0 = Date.now();
  let st = await loadState(name);
  while (st.snapshots < want) {
    const sid = newSnapshotId();
    const r = await request('POST', tablePath(name), { body: commitBody(name, st, sid), drop: true });
    if (r.status !== 200) fail(`grow ${name}: ${r.status} ${r.body?.slice(0, 300)}`);
    st = { ...st, current: sid, lastSeq: st.lastSeq + 1, snapshots: st.snapshots + 1 };
  }
  st = await loadState(name);
  console.log(JSON.stringify({ snapshots: st.snapshots, load_bytes: st.bytes, seconds: (Date.now() - t0) / 1000 }));
}

try {
  if (cmd === 'create-tables') await createTables();
  else if (cmd === 'commit') await commit();
  else if (cmd === 'grow') await grow();
  else fail('usage: bench_client.mjs create-tables|commit|grow --base URL --p /v1/PREFIX ...');
} catch (e) {
  fail(String(e.stack || e));
}
agent.destroy();
