// Permission violations surfaced to nats.js: subscription callback error and async status error for publish.
import { connect, StringCodec, ErrorCode, Events } from "nats";
import { scenario, servers, check, within, delay, record } from "./lib.mjs";

const sc = StringCodec();
await scenario(async () => {
  const nc = await connect({ servers: servers(), reconnect: false, user: "limited", pass: "limited" });
  const statuses = [];
  (async () => { for await (const s of nc.status()) statuses.push(s); })();

  // Subscribe to a denied subject: the subscription gets the error.
  let subErr = null;
  const denied = nc.subscribe("secret.plans", { callback: (err) => { if (err) subErr = err; } });
  await nc.flush();
  await within(3000, (async () => { while (!subErr) await delay(10); })(), "subscription permission error");
  check(subErr.code === ErrorCode.PermissionsViolation, `sub error code ${subErr.code}`);
  check(subErr.permissionContext?.operation === "subscription" && subErr.permissionContext?.subject === "secret.plans",
    `sub permission context ${JSON.stringify(subErr.permissionContext)}`);
  check(denied.isClosed(), "denied subscription is closed by the client");

  // Publish to a subject that is not allowed: reported as an async error status.
  nc.publish("forbidden.topic", sc.encode("x"));
  await nc.flush();
  const isPub = (s) => s.type === Events.Error && s.permissionContext?.operation === "publish";
  await within(3000, (async () => { while (!statuses.some(isPub)) await delay(10); })(), "publish permission status");
  const st = statuses.find(isPub);
  check(st.data === ErrorCode.PermissionsViolation, `status data ${st.data}`);
  check(st.permissionContext?.operation === "publish" && st.permissionContext?.subject === "forbidden.topic",
    `publish permission context ${JSON.stringify(st.permissionContext)}`);
  record("statuses", statuses.map((s) => ({ type: s.type, data: s.data, ctx: s.permissionContext })));

  // The connection stays usable for what is allowed.
  const ok = nc.subscribe("allowed.x", { max: 1 });
  nc.publish("allowed.x", sc.encode("fine"));
  for await (const m of ok) check(sc.decode(m.data) === "fine", "allowed traffic still flows");
  check(!nc.isClosed(), "connection not closed by violations");
  await nc.close();
});
