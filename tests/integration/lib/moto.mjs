// moto.mjs - a real S3 (+ IAM, STS) server for tests: moto_server from the machine
// image's Python, with signature checks on, and a small independent S3 client
// (SigV4 written here with node:crypto, not Floe's code) to look at what Floe wrote.
//
// The recipe (moto 5.2.1): start moto_server (through lib/moto_server.py, which
// fixes moto's canonical query string; see there) with INITIAL_NO_AUTH_ACTION_COUNT=0,
// so every AWS request is authenticated; then open exactly three unauthenticated
// actions through POST /moto-api/reset-auth ("3", text/plain) for the setup:
// iam CreateUser, CreateAccessKey and PutUserPolicy {Action:*, Resource:*}.  From the
// fourth request on, moto checks every signature against IAM: a wrong secret is
// SignatureDoesNotMatch, an unknown key InvalidAccessKeyId.  IAM requests must carry
// a SigV4 Authorization header for service "iam" (moto routes by its credential
// scope; any key will do while the no-auth actions last).
//
// Usage:
//   const s3 = await startMoto();          // null when moto_server is not installed
//   if (!s3) { t.skip('skipped: no S3 server'); return; }
//   await s3.createBucket('lake');
//   s3.endpoint, s3.accessKeyId, s3.secretAccessKey
//   await s3.list('lake', 'prefix/') -> [{key, size}], await s3.get('lake', key) -> Buffer
//   await s3.stop();
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

export const NO_S3 = 'skipped: no S3 server';

// The Python that runs moto_server (its shebang's interpreter, e.g. the pyenv one);
// null when moto_server is not installed. Asked once per process: the probe imports
// moto, ~1 s of CPU. tests/run.sh asks once for every file, and passes the answer in
// FLOE_TEST_MOTO_PYTHON (empty: none).
let motoPy;
export function motoPython() {
  if (motoPy !== undefined) return motoPy;
  const given = process.env.FLOE_TEST_MOTO_PYTHON;
  if (given !== undefined) return (motoPy = given === '' ? null : given);
  motoPy = null;
  const r = spawnSync('sh', ['-c', 'command -v moto_server'], { encoding: 'utf8' });
  if (r.status !== 0 || r.stdout.trim() === '') return motoPy;
  const py = spawnSync('sh', ['-c', 'for p in python3 python; do $p -c "import moto.server" 2>/dev/null && { command -v $p; exit 0; }; done; exit 1'], { encoding: 'utf8' });
  if (py.status === 0) motoPy = py.stdout.trim();
  return motoPy;
}

// True when moto_server can be started on this machine.
export function motoAvailable() {
  return motoPython() !== null;
}

const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex');
const hmac = (k, s) => crypto.createHmac('sha256', k).update(s).digest();

// RFC 3986 encoding as SigV4 wants it (upper-case hex; '/' kept in paths).
export function awsEncode(s, keepSlash) {
  return Array.from(Buffer.from(String(s), 'utf8'))
    .map((b) => {
      const c = String.fromCharCode(b);
      if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) return c;
      return `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
}

// Signs and sends one request; resolves {status, headers, body (Buffer), text}.
// query: an object of raw values (encoded and sorted here).
export function awsRequest({ endpoint, region = 'us-east-1', service = 's3', accessKeyId, secretAccessKey,
  sessionToken, method = 'GET', path = '/', query = {}, headers = {}, body = Buffer.alloc(0) }) {
  const u = new URL(endpoint);
  const payload = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  const canonQuery = Object.keys(query).sort()
    .map((k) => `${awsEncode(k, false)}=${awsEncode(query[k], false)}`).join('&');
  const canonPath = path.split('/').map((seg) => awsEncode(seg, false)).join('/');
  const hdrs = { host: u.host, 'x-amz-date': amzDate, 'x-amz-content-sha256': sha256(payload) };
  if (sessionToken) hdrs['x-amz-security-token'] = sessionToken;
  for (const [k, v] of Object.entries(headers)) hdrs[k.toLowerCase()] = String(v);
  const names = Object.keys(hdrs).sort();
  const canon = [method, canonPath, canonQuery, ...names.map((n) => `${n}:${hdrs[n].trim()}`), '',
    names.join(';'), hdrs['x-amz-content-sha256']].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const sts = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canon)].join('\n');
  let k = hmac(`AWS4${secretAccessKey}`, date);
  for (const part of [region, service, 'aws4_request']) k = hmac(k, part);
  const sig = crypto.createHmac('sha256', k).update(sts).digest('hex');
  hdrs.authorization = `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${sig}`;
  hdrs['content-length'] = String(payload.length);
  delete hdrs.host;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, agent: false, headers: hdrs,
      path: canonPath + (canonQuery ? `?${canonQuery}` : '') }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const b = Buffer.concat(chunks);
        resolve({ status: res.statusCode, headers: res.headers, body: b, text: b.toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const xmlText = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
  .replace(/&apos;/g, "'").replace(/&#(\d+);/g, (_, d) => String.fromCodePoint(Number(d)))
  .replace(/&amp;/g, '&');
export const xmlAll = (text, tag) => [...text.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => xmlText(m[1]));

// Starts moto_server with signature checks on; null when moto_server is absent.
export async function startMoto({ tag = 'moto' } = {}) {
  const python = motoPython();
  if (!python) return null;
  const port = await freePort();
  const env = { ...process.env, INITIAL_NO_AUTH_ACTION_COUNT: '0' };
  // lib/moto_server.py is moto_server with the raw query string restored (see there).
  const proc = spawn(python, [path.join(here, 'moto_server.py'), '-H', '127.0.0.1', '-p', String(port)],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let logs = '';
  proc.stdout.on('data', (d) => { logs += d; });
  proc.stderr.on('data', (d) => { logs += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      const r = await fetch(`${endpoint}/moto-api/`);
      if (r.ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline || proc.exitCode !== null) {
      proc.kill('SIGKILL');
      throw new Error(`moto_server (${tag}) did not start\n${logs}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const reset = await fetch(`${endpoint}/moto-api/reset-auth`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '3' });
  if (!reset.ok) throw new Error(`moto reset-auth: ${reset.status}`);
  const iam = (params) => awsRequest({ endpoint, service: 'iam', accessKeyId: 'setup', secretAccessKey: 'setup',
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...params, Version: '2010-05-08' }).toString() });
  const user = `floe-${tag}`.replace(/[^A-Za-z0-9+=,.@_-]/g, '-');
  const steps = [
    await iam({ Action: 'CreateUser', UserName: user }),
    await iam({ Action: 'CreateAccessKey', UserName: user }),
    await iam({ Action: 'PutUserPolicy', UserName: user, PolicyName: 'all',
      PolicyDocument: JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] }) }),
  ];
  for (const s of steps) if (s.status !== 200) throw new Error(`moto IAM setup: ${s.status} ${s.text}`);
  const accessKeyId = xmlAll(steps[1].text, 'AccessKeyId')[0];
  const secretAccessKey = xmlAll(steps[1].text, 'SecretAccessKey')[0];
  const creds = { endpoint, accessKeyId, secretAccessKey };
  const s3 = (o) => awsRequest({ ...creds, ...o });
  const check = (r, what) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
    return r;
  };
  return {
    endpoint,
    port,
    accessKeyId,
    secretAccessKey,
    logs: () => logs,
    request: s3,
    async createBucket(bucket) {
      check(await s3({ method: 'PUT', path: `/${bucket}` }), `create bucket ${bucket}`);
    },
    // Every object under prefix: [{key, size}], following continuation tokens.
    async list(bucket, prefix = '') {
      const out = [];
      let token;
      do {
        const query = { 'list-type': '2', prefix };
        if (token) query['continuation-token'] = token;
        const r = check(await s3({ path: `/${bucket}`, query }), `list ${bucket}/${prefix}`);
        const keys = xmlAll(r.text, 'Key');
        const sizes = xmlAll(r.text, 'Size');
        keys.forEach((key, i) => out.push({ key, size: Number(sizes[i]) }));
        token = /<IsTruncated>true<\/IsTruncated>/.test(r.text) ? xmlAll(r.text, 'NextContinuationToken')[0] : undefined;
      } while (token);
      return out;
    },
    // Multipart uploads not completed nor aborted, under prefix: [{key, uploadId}].
    async uploads(bucket, prefix = '') {
      const r = check(await s3({ path: `/${bucket}`, query: { uploads: '', prefix } }), `list uploads ${bucket}`);
      const keys = xmlAll(r.text, 'Key');
      const ids = xmlAll(r.text, 'UploadId');
      return keys.map((key, i) => ({ key, uploadId: ids[i] }));
    },
    async get(bucket, key) {
      return check(await s3({ path: `/${bucket}/${key}` }), `get ${bucket}/${key}`).body;
    },
    async put(bucket, key, body) {
      check(await s3({ method: 'PUT', path: `/${bucket}/${key}`, body, headers: { 'content-type': 'application/octet-stream' } }), `put ${bucket}/${key}`);
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}
