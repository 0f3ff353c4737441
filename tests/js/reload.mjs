// Config reload: connected as alice; bob is unknown. The test adds bob to the config and sends SIGHUP, then
// writes "reloaded". bob must then authenticate, and alice's connection must have stayed up throughout.
import { connect, StringCodec, Events, ErrorCode } from "nats";
import { scenario, servers, check, within, delay, emit, nextCommand, caught, record } from "./lib.mjs";

const sc = StringCodec();
const opts = (u, p) => ({ servers: servers(), reconnect: false, user: u, pass: p });
await scenario(async () => {
  const alice = await connect(opts("alice", "alice-pass"));
  const events = [];
  (async () => { for await (const s of alice.status()) events.push(s.type); })();
  const before = await caught(async () => { const c = await connect(opts("bob", "bob-pass")); await c.close(); });
  check(before && before.code === ErrorCode.AuthorizationViolation, `bob rejected before reload: ${before && before.code}`);
  emit("ready");

  const cmd = await nextCommand(30000);
  check(cmd === "reloaded", `command ${cmd}`);
  // The reload is asynchronous in the server: retry bob for a bounded time.
  let bob = null;
  let lastErr = null;
  await within(10000, (async () => {
    while (!bob) {
      try { bob = await connect(opts("bob", "bob-pass")); } catch (e) { lastErr = e; await delay(100); }
    }
  })(), `bob accepted after reload (last error ${lastErr && lastErr.code})`);
  const sub = bob.subscribe("js.reload", { max: 1 });
  await bob.flush();
  alice.publish("js.reload", sc.encode("from alice"));
  for await (const m of sub) check(sc.decode(m.data) === "from alice", "alice (old connection) -> bob (new creds)");
  check(!alice.isClosed(), "alice still connected");
  check(!events.includes(Events.Disconnect), `alice never disconnected: ${events}`);
  const wrong = await caught(async () => { const c = await connect(opts("bob", "wrong")); await c.close(); });
  check(wrong && wrong.code === ErrorCode.AuthorizationViolation, "wrong password still rejected");
  record("events", events);
  await bob.close();
  await alice.close();
});
