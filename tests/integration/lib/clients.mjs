// iceberg-js@1.0.0 clients whose every response is checked against the upstream
// spec before iceberg-js sees it. A body that does not match its schema makes the
// call throw (iceberg-js surfaces it as an IcebergError carrying our message), so a
// test using the client fails on any non-conforming response.
import { IcebergRestCatalog } from 'iceberg-js';
import { validate } from './spec.mjs';

// Which schema a response must match, from method + path (+ status).
export function schemaFor(method, pathname, status) {
  if (method === 'HEAD') return null;
  if (status === 204) return null;
  if (status >= 400) return 'IcebergErrorResponse';
  if (status === 304) return null;
  const p = pathname.replace(/^\/v1\//, '');
  if (p === 'config') return 'CatalogConfig';
  const segs = p.split('/');
  // optional prefix: `namespaces` is either segs[0] or segs[1]
  const i = segs[0] === 'namespaces' ? 0 : 1;
  const rest = segs.slice(i);
  if (rest[0] !== 'namespaces') return null;
  if (rest.length === 1) return method === 'GET' ? 'ListNamespacesResponse' : 'CreateNamespaceResponse';
  if (rest.length === 2 && method === 'GET') return 'GetNamespaceResponse';
  if (rest.length === 3 && rest[2] === 'properties') return 'UpdateNamespacePropertiesResponse';
  return null;
}

export function validatingFetch(seen = []) {
  return async (url, init = {}) => {
    const res = await globalThis.fetch(url, init);
    const method = (init.method || 'GET').toUpperCase();
    const { pathname } = new URL(url);
    const text = await res.clone().text();
    seen.push({ method, url: String(url), status: res.status, headers: init.headers });
    if (!res.headers.get('x-request-id')) throw new Error(`no X-Request-Id on ${method} ${url}`);
    if (method === 'HEAD' || res.status === 204) {
      if (text !== '') throw new Error(`${method} ${url} -> ${res.status} has a body: ${text.slice(0, 200)}`);
      return res;
    }
    const schema = schemaFor(method, pathname, res.status);
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${url} -> ${res.status}: body is not JSON: ${text.slice(0, 200)}`);
    }
    if (!(res.headers.get('content-type') || '').startsWith('application/json')) {
      throw new Error(`${method} ${url} -> ${res.status}: content-type ${res.headers.get('content-type')}`);
    }
    if (schema) validate(schema, body);
    if (res.status >= 400 && body.error.code !== res.status) {
      throw new Error(`${method} ${url}: error.code ${body.error.code} != status ${res.status}`);
    }
    return res;
  };
}

export function catalog(baseUrl, { warehouse, seen, token = 'None', ...rest } = {}) {
  return new IcebergRestCatalog({
    baseUrl,
    warehouse,
    auth: { type: 'bearer', token },
    fetch: validatingFetch(seen),
    ...rest,
  });
}
