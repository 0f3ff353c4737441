// Authentication with nats.js. Env: GOOD (JSON connect options that must work), BAD (JSON array of options that must fail).
// Besides nats.js's own options, an entry may carry "nkeySeed" (nkeyAuthenticator), "creds" (the text of a .creds
// file: credsAuthenticator) or "userJwt" + "seed" (jwtAuthenticator), as applications hand them to nats.js.
import { connect, StringCodec, ErrorCode, nkeyAuthenticator, credsAuthenticator, jwtAuthenticator } from "nats";
import { scenario, servers, check, caught, record } from "./lib.mjs";

const sc = StringCodec();
const te = new TextEncoder();
function toOpts(o) {
  const { nkeySeed, creds, userJwt, seed, ...rest } = o;
  if (nkeySeed) rest.authenticator = nkeyAuthenticator(te.encode(nkeySeed));
  if (creds) rest.authenticator = credsAuthenticator(te.encode(creds));
  if (userJwt) rest.authenticator = jwtAuthenticator(userJwt, seed ? te.encode(seed) : undefined);
  return rest;
}
await scenario(async () => {
  const good = toOpts(JSON.parse(process.env.GOOD || "{}"));
  const bad = JSON.parse(process.env.BAD || "[]").map(toOpts);
  const nc = await connect({ servers: servers(), reconnect: false, ...good });
  check(nc.info.auth_required === true, "INFO auth_required");
  const sub = nc.subscribe("js.auth", { max: 1 });
  nc.publish("js.auth", sc.encode("in"));
  for await (const m of sub) check(sc.decode(m.data) === "in", "authenticated connection works");
  await nc.close();
  const codes = [];
  for (const b of bad) {
    const err = await caught(async () => { const c = await connect({ servers: servers(), reconnect: false, maxReconnectAttempts: 0, ...b }); await c.close(); });
    codes.push(err && err.code);
    const what = JSON.stringify({ ...b, authenticator: b.authenticator ? "<authenticator>" : undefined });
    check(err !== null, `credentials ${what} rejected`);
    check(err && err.code === ErrorCode.AuthorizationViolation, `code AUTHORIZATION_VIOLATION for ${what}, got ${err && err.code}`);
  }
  record("codes", codes);
});
