// The token requests PyIceberg and DuckDB really send (form body with id and secret;
// Basic auth with grant_type and scope in the body), then a catalog session with the
// token, expiry and refresh the way the clients do it (401 -> new token -> retry once),
// OAuth error shapes, and the rate limit on failed attempts.
// The expiry tests talk to a second floe on the same database whose tokens live 2 s;
// everything else (setup included) uses the first, with the default lifetime, so that
// no call can outlive its token on a slow machine (a sanitizer build under load).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rawExchange, request, sleep, startFloe } from '../lib/harness.mjs';
import { catalog } from '../lib/clients.mjs';
import {
  ADMIN_ID, ADMIN_SECRET, assertNoLeaks, bearer, duckdbTokenRequest, mgmt, pyicebergTokenRequest, remember,
  startAuthFloe, tokenFor,
} from './lib.mjs';

let env;
let short; // the same catalog, tokens living 2 s
let writer;
let adminToken;

before(async () => {
  env = await startAuthFloe({ tag: 'auth_clients' });
  adminToken = await tokenFor(env.base, ADMIN_ID, ADMIN_SECRET);
  let res = await mgmt(env.base, adminToken, 'POST', '/principals', { name: 'etl' });
  assert.equal(res.status, 201, `create principal etl: ${res.status} ${res.text}`);
  writer = { id: 'etl', secret: remember(res.json['client-secret']) };
  res = await mgmt(env.base, adminToken, 'POST', '/principals/etl/roles', { role: 'writer' });
  assert.equal(res.status, 204, `assign writer to etl: ${res.status} ${res.text}`);
  short = await startFloe({
    databaseUrl: env.db.url,
    args: ['--auth', 'token', '--token-signing-key', env.key.priv, '--token-lifetime', '2', '--token-clock-skew', '0'],
  });
});

after(async () => {
  if (short) await assertNoLeaks(short);
  if (env) await assertNoLeaks(env.floe, adminToken);
  await short?.stop();
  await env?.floe.stop();
});

function checkTokenResponse(res, scope) {
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers['content-type'], /^application\/json/);
  assert.equal(res.headers['cache-control'], 'no-store');
  const t = res.json;
  remember(t.access_token);
  assert.equal(t.token_type, 'bearer');
  assert.equal(t.expires_in, 2);
  assert.equal(t.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
  assert.equal(t.scope, scope);
  assert.equal(t.access_token.split('.').length, 3);
  const payload = JSON.parse(Buffer.from(t.access_token.split('.')[1], 'base64url').toString());
  assert.equal(payload.sub, 'etl');
  assert.equal(payload.exp - payload.iat, 2);
  return t.access_token;
}

// A client that refreshes its token on 401 and retries once (PyIceberg's and DuckDB's behaviour).
function session(getToken) {
  let token;
  let refreshes = 0;
  const send = async (method, p, body) => {
    if (!token) token = await getToken();
    let res = await request(short.baseUrl, method, p, { headers: bearer(token), body });
    if (res.status === 401) {
      refreshes++;
      token = await getToken();
      res = await request(short.baseUrl, method, p, { headers: bearer(token), body });
    }
    return res;
  };
  return { send, refreshes: () => refreshes, token: () => token };
}

for (const [client, fetchToken, scope] of [
  ['PyIceberg (form body)', (id, s) => pyicebergTokenRequest(short.baseUrl, id, s), 'catalog'],
  ['DuckDB (Basic)', (id, s) => duckdbTokenRequest(short.baseUrl, id, s), 'PRINCIPAL_ROLE:ALL'],
]) {
  test(`${client}: token, catalog session, refresh after expiry`, async () => {
    const ns = client.startsWith('Py') ? 'py' : 'duck';
    const s = session(async () => checkTokenResponse(await fetchToken(writer.id, writer.secret), scope));
    let res = await s.send('GET', '/v1/config?warehouse=default');
    assert.equal(res.status, 200, res.text);
    res = await s.send('POST', '/v1/default/namespaces', { namespace: [ns] });
    assert.equal(res.status, 200, res.text);
    res = await s.send('POST', `/v1/default/namespaces/${ns}/tables`, {
      name: 't',
      schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', type: 'long', required: false }] },
    });
    assert.equal(res.status, 200, res.text);
    // Counted from here: on a loaded machine a 2 s token may already have expired (and
    // been refreshed) during the calls above.
    const refreshed = s.refreshes();
    const first = s.token();
    await sleep(3100); // past exp (lifetime 2 s, skew 0)
    const stale = await request(short.baseUrl, 'GET', `/v1/default/namespaces/${ns}/tables/t`, { headers: bearer(first) });
    assert.equal(stale.status, 401, 'the expired token is refused');
    assert.match(stale.json.error.message, /expired/);
    const u = new URL(short.baseUrl);
    const big = await rawExchange(
      short.baseUrl,
      `POST /v1/default/namespaces HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${first}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{`,
      { timeoutMs: 5000 },
    );
    assert.match(big, /^HTTP\/1\.[01] 401/, `a large body with the expired token: ${big.slice(0, 300)}`);
    assert.match(big, /expired/);
    res = await s.send('GET', `/v1/default/namespaces/${ns}/tables/t`);
    assert.equal(res.status, 200, res.text);
    assert.equal(s.refreshes(), refreshed + 1, 'one refresh after expiry');
    assert.notEqual(s.token(), first);
  });
}

test('iceberg-js session with a token from the endpoint', async () => {
  const t = await tokenFor(env.base, writer.id, writer.secret);
  const c = catalog(env.base, { token: t });
  await c.createNamespace({ namespace: ['js'] });
  const { namespaces } = await c.listNamespaces();
  assert.ok(namespaces.some((n) => n.namespace.join('.') === 'js'));
});

test('OAuth errors: shape and status', async () => {
  const form = (body, headers = {}) =>
    request(env.base, 'POST', '/v1/oauth/tokens', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
      body,
    });
  const check = (res, status, code) => {
    assert.equal(res.status, status, res.text);
    assert.equal(res.json.error, code, res.text);
    assert.equal(typeof res.json.error_description, 'string');
  };
  check(await form(`grant_type=password&username=a&password=b`), 400, 'unsupported_grant_type');
  check(await form(`client_id=etl&client_secret=x`), 400, 'invalid_request');
  check(await form(`grant_type=client_credentials&grant_type=client_credentials&client_id=etl&client_secret=x`), 400, 'invalid_request');
  check(await form(`grant_type=client_credentials`), 401, 'invalid_client');
  const amps = await form('&'.repeat(20000));
  check(amps, 400, 'invalid_request');
  assert.equal(amps.json.error_description, 'form body of 20000 bytes is over 16384');
  const empties = await form(`${'&'.repeat(100)}grant_type=client_credentials`);
  check(empties, 400, 'invalid_request');
  assert.equal(empties.json.error_description, 'too many form fields');
  const wide = await form(`grant_type=client_credentials&client_id=etl&client_secret=x&scope=${'a'.repeat(1001)}`);
  check(wide, 400, 'invalid_scope');
  assert.equal(wide.json.error_description, 'scope of 1001 bytes is over 1000');
  const wrongBody = await form(`grant_type=client_credentials&client_id=etl&client_secret=wrong-secret-1`);
  check(wrongBody, 401, 'invalid_client');
  assert.match(wrongBody.headers['www-authenticate'], /^Bearer/);
  const wrongBasic = await duckdbTokenRequest(env.base, 'etl', 'wrong-secret-2');
  check(wrongBasic, 401, 'invalid_client');
  assert.match(wrongBasic.headers['www-authenticate'], /^Basic/);
  const both = await form(`grant_type=client_credentials&client_secret=${writer.secret}`, {
    Authorization: `Basic ${Buffer.from(`etl:${writer.secret}`).toString('base64')}`,
  });
  check(both, 400, 'invalid_request');
  const json = await request(env.base, 'POST', '/v1/oauth/tokens', { body: { grant_type: 'client_credentials' } });
  check(json, 400, 'invalid_request');
  check(await pyicebergTokenRequest(env.base, 'nobody', 'whatever-secret'), 401, 'invalid_client');
});

test('without an Authorization header a body may declare no more than 64 KiB, refused before it is sent', async () => {
  const u = new URL(env.base);
  const raw = await rawExchange(
    env.base,
    `POST /v1/namespaces HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{`,
    { timeoutMs: 5000 },
  );
  assert.match(raw, /^HTTP\/1\.[01] 413/, raw.slice(0, 300) || '(nothing within 5 s)');
  assert.match(raw, /request body exceeds the limit of 65536 bytes without an Authorization header/);
  // A token refused by its signature or claims gets the same bound, and the refusal as
  // its answer: a client whose token expired refreshes it on 401 (a 413 would stop it).
  const bad = await rawExchange(
    env.base,
    `POST /v1/namespaces HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer not-a-token\r\n` +
      `Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{`,
    { timeoutMs: 5000 },
  );
  assert.match(bad, /^HTTP\/1\.[01] 401/, bad.slice(0, 300) || '(nothing within 5 s)');
  assert.match(bad, /invalid token/);
  assert.doesNotMatch(bad, /not-a-token/, 'the token is not echoed');
  // the same without a declared length (chunked): refused once 64 KiB have come
  let res = await request(env.base, 'POST', '/v1/namespaces', {
    body: { namespace: ['big'], properties: { a: 'x'.repeat(50000), b: 'y'.repeat(50000) } },
    headers: { Authorization: 'Bearer not-a-token', 'Transfer-Encoding': 'chunked' },
  });
  assert.equal(res.status, 401, res.text);
  assert.match(res.json.error.message, /invalid token/);
  // a valid token may send up to max-body-bytes
  res = await request(env.base, 'POST', '/v1/default/namespaces', {
    body: { namespace: ['big'], properties: { a: 'x'.repeat(50000), b: 'y'.repeat(50000) } },
    headers: bearer(adminToken),
  });
  assert.equal(res.status, 200, res.text);
});

test('failed attempts are rate limited per client and per address (429 + Retry-After)', async () => {
  const limited = await startAuthFloe({ tag: 'auth_ratelimit', args: ['--auth-max-failures', '3'] });
  try {
    const t = await tokenFor(limited.base, ADMIN_ID, ADMIN_SECRET);
    for (let i = 0; i < 3; i++) {
      const r = await pyicebergTokenRequest(limited.base, ADMIN_ID, `wrong-${i}-padding`);
      assert.equal(r.status, 401, r.text);
    }
    const r = await pyicebergTokenRequest(limited.base, ADMIN_ID, ADMIN_SECRET);
    assert.equal(r.status, 429, `even the right secret waits: ${r.text}`);
    assert.equal(r.json.error, 'invalid_client');
    assert.ok(Number(r.headers['retry-after']) > 0 && Number(r.headers['retry-after']) <= 60);
    // The address is limited too: another client id from here also waits.
    const other = await duckdbTokenRequest(limited.base, 'someone-else', 'x'.repeat(20));
    assert.equal(other.status, 429);
    // Tokens already issued keep working: the limit is on the token endpoint only.
    const ok = await request(limited.base, 'GET', '/v1/namespaces', { headers: bearer(t) });
    assert.equal(ok.status, 200);
    assert.match(limited.floe.logs(), /rate limited/);
    await assertNoLeaks(limited.floe, t);
  } finally {
    await limited.floe.stop();
  }
});
