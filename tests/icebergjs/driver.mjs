// Drives the iceberg-js client (IcebergRestCatalog, the version
// package-lock.json pins) against a running floe for the integration tests
// (tests/integration/test_icebergjs.py).
//
//   node driver.mjs --url http://127.0.0.1:8181 [--warehouse NAME] < steps.json
//
// Authentication, from the environment (so that no secret is on a command
// line):
//   ICEBERG_TOKEN   a bearer token: iceberg-js's auth { type: 'bearer' }
//   ICEBERG_CLIENT  CLIENT_ID:SECRET: iceberg-js has no OAuth2 flow of its
//                   own, so its auth { type: 'custom' } is given a function
//                   that asks floe's POST /v1/oauth/tokens for a token by
//                   client credentials (once; the token is reused)
//   neither         auth { type: 'none' }
//
// stdin is a JSON array of steps, each { "op": METHOD, "args": [...] },
// METHOD one of the catalog's methods below, called with args in order.
// stdout is one JSON document: { "results": [...], "tokenRequests": N },
// a result per step, { "ok": true, "value": ... } or { "ok": false,
// "error": { name, status, type, code, message } } (an IcebergError's
// status, icebergType and icebergCode). A failed step does not stop the
// ones after it. Exit status 2 is a misuse of the driver itself.
import { readFileSync } from 'node:fs';
import { IcebergError, IcebergRestCatalog } from 'iceberg-js';

const METHODS = new Set([
  'loadConfig', 'listNamespaces', 'createNamespace', 'createNamespaceIfNotExists',
  'loadNamespaceMetadata', 'namespaceExists', 'updateNamespaceProperties', 'dropNamespace',
  'listTables', 'createTable', 'createTableIfNotExists', 'loadTable', 'loadTableResult',
  'tableExists', 'updateTable', 'commitTable', 'renameTable', 'dropTable',
]);

function usage(message) {
  process.stderr.write(`driver.mjs: ${message}\n`);
  process.exit(2);
}

function options(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    if (!['--url', '--warehouse'].includes(name) || argv[i + 1] === undefined) {
      usage(`unknown option or missing value: ${name}`);
    }
    out[name.slice(2)] = argv[i + 1];
  }
  if (!out.url) usage('--url is required');
  return out;
}

const counter = { tokenRequests: 0 };

// auth { type: 'custom' }: the client-credentials grant against floe's
// token endpoint, form-encoded as OAuth2 asks.
function clientCredentials(baseUrl, credential) {
  const colon = credential.indexOf(':');
  if (colon < 1) usage('ICEBERG_CLIENT is CLIENT_ID:SECRET');
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: credential.slice(0, colon),
    client_secret: credential.slice(colon + 1),
  });
  let token;
  return async () => {
    if (token === undefined) {
      counter.tokenRequests += 1;
      const res = await fetch(new URL('v1/oauth/tokens', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok || typeof body.access_token !== 'string') {
        throw new IcebergError(body.error_description ?? `token request failed with status ${res.status}`, {
          status: res.status, icebergType: body.error, details: body,
        });
      }
      token = body.access_token;
    }
    return { Authorization: `Bearer ${token}` };
  };
}

function auth(baseUrl) {
  if (process.env.ICEBERG_TOKEN !== undefined) {
    return { type: 'bearer', token: process.env.ICEBERG_TOKEN };
  }
  if (process.env.ICEBERG_CLIENT !== undefined) {
    return { type: 'custom', getHeaders: clientCredentials(baseUrl, process.env.ICEBERG_CLIENT) };
  }
  return { type: 'none' };
}

function describeError(err) {
  if (err instanceof IcebergError) {
    return {
      name: err.name, status: err.status, type: err.icebergType ?? null,
      code: err.icebergCode ?? null, message: err.message,
    };
  }
  return { name: err?.name ?? 'Error', status: null, type: null, code: null, message: String(err?.message ?? err) };
}

const opts = options(process.argv.slice(2));
let steps;
try {
  steps = JSON.parse(readFileSync(0, 'utf8'));
} catch (err) {
  usage(`stdin is not JSON: ${err.message}`);
}
if (!Array.isArray(steps)) usage('stdin is a JSON array of steps');

const catalog = new IcebergRestCatalog({
  baseUrl: opts.url,
  ...(opts.warehouse !== undefined ? { warehouse: opts.warehouse } : {}),
  auth: auth(opts.url),
});

const results = [];
for (const step of steps) {
  if (!METHODS.has(step?.op)) usage(`not a catalog method: ${JSON.stringify(step?.op)}`);
  try {
    const value = await catalog[step.op](...(step.args ?? []));
    results.push({ ok: true, value: value ?? null });
  } catch (err) {
    results.push({ ok: false, error: describeError(err) });
  }
}
process.stdout.write(`${JSON.stringify({ results, tokenRequests: counter.tokenRequests })}\n`);
