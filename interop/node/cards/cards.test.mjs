// A signed card with every security scheme Mailroom declares, read by
// @a2a-js/sdk 0.3.14 and 1.3.0 and its signature verified with node's own
// crypto: an implementation of JWS verification other than the daemon's
// (go-jose), over an RFC 8785 form computed here. Run by
// daemon/a2a/cardsecurity_test.go (TestJSSDKReadsSignedCardWithSchemes),
// which serves the card and sets MAILROOM_CARD_BASE and MAILROOM_CARD_JWKS;
// without them these tests skip. SDK calls used, checked in each
// version's dist/client/index.d.ts: DefaultAgentCardResolver (resolve).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { DefaultAgentCardResolver as ResolverV03 } from 'a2a-v03/client';
import { DefaultAgentCardResolver as ResolverV1 } from 'a2a-v1/client';

const BASE = process.env.MAILROOM_CARD_BASE;
const JWKS = process.env.MAILROOM_CARD_JWKS;
const skip = !(BASE && JWKS) && 'needs a served card: go test ./daemon/a2a -run TestJSSDKReadsSignedCardWithSchemes';

// canonical is RFC 8785 for a card, which holds no numbers: members
// sorted by their UTF-16 code units, strings as JSON.stringify writes
// them (RFC 8785 section 3.2.2.2 is ECMAScript's own escaping).
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  assert.notEqual(typeof v, 'number', 'a card with numbers needs a full RFC 8785 implementation');
  return JSON.stringify(v);
}

const b64url = (buf) => Buffer.from(buf).toString('base64url');

test('the card verifies with node crypto from the served JWKS, and a changed one does not', { skip }, async () => {
  const card = await (await fetch(`${BASE}.well-known/agent-card.json`)).json();
  const jwks = await (await fetch(JWKS)).json();
  assert.equal(card.signatures?.length, 1, 'one signature');
  const [sig] = card.signatures;
  const header = JSON.parse(Buffer.from(sig.protected, 'base64url').toString());
  assert.equal(header.alg, 'ES256');
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  assert.ok(jwk, `the JWKS holds kid ${header.kid}`);
  const key = createPublicKey({ key: jwk, format: 'jwk' });
  const { signatures, ...unsigned } = card;
  const input = (c) => Buffer.from(`${sig.protected}.${b64url(canonical(c))}`);
  const signature = Buffer.from(sig.signature, 'base64url');
  assert.ok(verify('sha256', input(unsigned), { key, dsaEncoding: 'ieee-p1363' }, signature), 'the served card verifies');
  assert.ok(!verify('sha256', input({ ...unsigned, name: 'Codex' }), { key, dsaEncoding: 'ieee-p1363' }, signature), 'a changed card does not');
});

test('@a2a-js/sdk 0.3.14 resolves the signed card and its schemes', { skip }, async () => {
  const card = await new ResolverV03().resolve(BASE);
  assert.equal(card.name, 'Coder');
  assert.deepEqual(Object.keys(card.securitySchemes ?? {}).sort(), ['bearer', 'mtls', 'oidc']);
  assert.equal(card.securitySchemes.mtls.type, 'mutualTLS');
  assert.equal(card.securitySchemes.oidc.type, 'openIdConnect');
  assert.match(card.securitySchemes.oidc.openIdConnectUrl, /\/\.well-known\/openid-configuration$/);
});

test('@a2a-js/sdk 1.3.0 resolves the signed card and its schemes', { skip }, async () => {
  const card = await new ResolverV1().resolve(BASE);
  assert.equal(card.name, 'Coder');
  assert.deepEqual(Object.keys(card.securitySchemes ?? {}).sort(), ['bearer', 'mtls', 'oidc']);
  assert.equal(card.signatures?.length, 1, 'the SDK keeps the signature');
});
