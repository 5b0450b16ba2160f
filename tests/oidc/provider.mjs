// A real OpenID provider (the OpenID-certified oidc-provider package) for
// floe's tests of an external issuer, on loopback over plain http.
//
//   node provider.mjs --port PORT --keys FILE [--rotate]
//
// FILE holds the provider's private signing keys (a JWK set: one RSA key
// for RS256 and one EC P-256 key for ES256, newest first). It is made when
// absent; --rotate puts a new pair in front of the old one, so that the
// provider signs with new key ids while the old keys stay in its key set.
// The issuer is http://127.0.0.1:PORT; "ready ISSUER" on stdout says it
// listens.
//
// Clients (client_credentials, secret "<id>-secret"): each gets a JWT
// access token for the resource server "urn:floe" with the audience,
// algorithm, lifetime and roles claim of its row below. They authenticate
// with client_secret_basic, except those marked post: client_secret_post,
// the client id and secret in the form body, as Iceberg's Java client
// (Spark, Trino), PyIceberg and DuckDB send them. The resource server's
// scope is "catalog", the scope Iceberg's clients ask for by default; a
// scope it does not know (DuckDB's PRINCIPAL_ROLE:ALL) is left out of the
// token, not refused.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const RESOURCE = 'urn:floe';

const CLIENTS = {
  'floe-rs256': { alg: 'RS256', audience: 'floe', ttl: 300, roles: ['reader', 'writer'] },
  // One space-separated string, as some providers put scopes and groups.
  'floe-es256': { alg: 'ES256', audience: 'floe', ttl: 300, roles: 'auditor analyst' },
  'floe-other-audience': { alg: 'ES256', audience: 'not-floe', ttl: 300, roles: ['reader'] },
  'floe-short-lived': { alg: 'ES256', audience: 'floe', ttl: 1, roles: ['reader'] },
  // A claim naming floe's administrator role beside ordinary ones.
  'floe-claims-admin': { alg: 'ES256', audience: 'floe', ttl: 300, roles: ['admin', 'reader', 'writer'] },
  // The engines' clients: one that may write, one that may only read.
  'floe-engine-writer': { alg: 'RS256', audience: 'floe', ttl: 3600, roles: ['writer'], post: true },
  'floe-engine-reader': { alg: 'ES256', audience: 'floe', ttl: 3600, roles: ['reader'], post: true },
};

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    keys: { type: 'string' },
    rotate: { type: 'boolean', default: false },
  },
});
if (!args.port || !args.keys) {
  process.stderr.write('usage: provider.mjs --port PORT --keys FILE [--rotate]\n');
  process.exit(2);
}

function newKeyPair() {
  const kid = () => randomBytes(12).toString('base64url');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  return [
    { ...rsa, kid: kid(), use: 'sig', alg: 'RS256' },
    { ...ec, kid: kid(), use: 'sig', alg: 'ES256' },
  ];
}

let keys = existsSync(args.keys) ? JSON.parse(readFileSync(args.keys, 'utf8')).keys : [];
if (keys.length === 0 || args.rotate) {
  keys = [...newKeyPair(), ...keys];
  writeFileSync(`${args.keys}.tmp`, JSON.stringify({ keys }), { mode: 0o600 });
  renameSync(`${args.keys}.tmp`, args.keys);
}

const issuer = `http://127.0.0.1:${args.port}`;
const provider = new Provider(issuer, {
  clients: Object.entries(CLIENTS).map(([id, c]) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: c.post ? 'client_secret_post' : 'client_secret_basic',
  })),
  jwks: { keys },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => {
        const c = CLIENTS[client.clientId];
        return {
          scope: 'catalog',
          audience: c.audience,
          accessTokenTTL: c.ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: c.alg } },
        };
      },
    },
  },
  extraTokenClaims: (ctx, token) => ({ roles: CLIENTS[token.clientId].roles }),
});

const server = provider.listen(Number(args.port), '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
