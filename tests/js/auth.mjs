// Authentication with nats.js. Env: GOOD (JSON connect options that must work), BAD (JSON array of options that must fail).
import { connect, StringCodec, ErrorCode } from "nats";
import { scenario, servers, check, caught, record } from "./lib.mjs";

const sc = StringCodec();
await scenario(async () => {
  const good = JSON.parse(process.env.GOOD || "{}");
  const bad = JSON.parse(process.env.BAD || "[]");
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
    check(err !== null, `credentials ${JSON.stringify(b)} rejected`);
    check(err && err.code === ErrorCode.AuthorizationViolation, `code AUTHORIZATION_VIOLATION for ${JSON.stringify(b)}, got ${err && err.code}`);
  }
  record("codes", codes);
});
