// Reconnect: the test kills the server and restarts it on the same port, then writes "restarted" on stdin.
import { connect, StringCodec, Events } from "nats";
import { scenario, servers, check, within, delay, emit, nextCommand, record } from "./lib.mjs";

const sc = StringCodec();
await scenario(async () => {
  const nc = await connect({ servers: servers(), reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 100, reconnectJitter: 0, pingInterval: 1000 });
  const events = [];
  (async () => { for await (const s of nc.status()) events.push(s.type); })();
  const got = [];
  nc.subscribe("js.rc", { callback: (err, m) => { if (!err) got.push(sc.decode(m.data)); } });
  nc.publish("js.rc", sc.encode("before"));
  await nc.flush();
  await within(3000, (async () => { while (!got.includes("before")) await delay(10); })(), "message before restart");
  emit("ready");

  const cmd = await nextCommand(30000);
  check(cmd === "restarted", `command ${cmd}`);
  await within(15000, (async () => { while (!events.includes(Events.Reconnect)) await delay(20); })(), "reconnect event");
  check(events.includes(Events.Disconnect), `disconnect seen: ${events}`);
  // Subscriptions are replayed by the client after reconnecting.
  nc.publish("js.rc", sc.encode("after"));
  await nc.flush();
  await within(5000, (async () => { while (!got.includes("after")) await delay(10); })(), "message after restart");
  check(!nc.isClosed(), "client still open");
  record("events", events);
  await nc.close();
});
