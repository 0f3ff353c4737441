// Core messaging scenarios with the official nats.js client. CASE selects one.
import { connect, StringCodec, headers, ErrorCode, createInbox } from "nats";
import { scenario, servers, check, within, caught, record, delay } from "./lib.mjs";

const sc = StringCodec();
const opts = (extra = {}) => ({ servers: servers(), reconnect: false, ...extra });

async function collect(sub, n, ms = 5000) {
  const got = [];
  await within(ms, (async () => { for await (const m of sub) { got.push(m); if (got.length >= n) break; } })(), `${n} messages on ${sub.getSubject()}`);
  return got;
}

const cases = {
  async pubsub() {
    const nc = await connect(opts({ name: "pubsub" }));
    const sub = nc.subscribe("js.ps");
    const p = collect(sub, 3);
    await nc.flush();
    for (const s of ["a", "b", "c"]) nc.publish("js.ps", sc.encode(s));
    nc.publish("js.ps.not", sc.encode("x"));
    const got = await p;
    check(got.map((m) => sc.decode(m.data)).join("") === "abc", `payloads in order: ${got.map((m) => sc.decode(m.data))}`);
    check(got.every((m) => m.subject === "js.ps"), "subjects");
    // empty and large payloads
    const sub2 = nc.subscribe("js.sizes");
    const p2 = collect(sub2, 2);
    await nc.flush();
    nc.publish("js.sizes");
    const big = new Uint8Array(512 * 1024).map((_, i) => i % 251);
    nc.publish("js.sizes", big);
    const [e, b] = await p2;
    check(e.data.length === 0, "empty payload");
    check(b.data.length === big.length && b.data.every((v, i) => v === big[i]), "512 KiB payload intact");
    check(nc.info && nc.info.max_payload >= 1048576, `INFO max_payload ${nc.info?.max_payload}`);
    await nc.drain();
  },

  async wildcards() {
    const nc = await connect(opts());
    const star = nc.subscribe("js.wc.*");
    const gt = nc.subscribe("js.wc.>");
    const ps = collect(star, 1);
    const pg = collect(gt, 2);
    await nc.flush();
    nc.publish("js.wc.a", sc.encode("1"));
    nc.publish("js.wc.a.b", sc.encode("2"));
    const s = await ps;
    const g = await pg;
    check(s[0].subject === "js.wc.a", "* matched one token");
    check(g.map((m) => m.subject).join(",") === "js.wc.a,js.wc.a.b", `> matched: ${g.map((m) => m.subject)}`);
    await nc.flush();
    check(star.getReceived() === 1, `* received ${star.getReceived()} (must not match two tokens)`);
    await nc.drain();
  },

  async queue() {
    const members = await Promise.all([0, 1, 2].map(() => connect(opts())));
    const counts = [0, 0, 0];
    const seen = new Map();
    members.forEach((nc, i) => nc.subscribe("js.q", { queue: "workers", callback: (err, m) => {
      if (err) return;
      counts[i]++;
      const k = sc.decode(m.data);
      seen.set(k, (seen.get(k) || 0) + 1);
    } }));
    await Promise.all(members.map((nc) => nc.flush()));
    const pub = await connect(opts());
    const N = 300;
    for (let i = 0; i < N; i++) pub.publish("js.q", sc.encode(String(i)));
    await pub.flush();
    await within(5000, (async () => { while (counts.reduce((a, b) => a + b, 0) < N) await delay(20); })(), "all queue messages");
    await delay(200);
    await Promise.all(members.map((nc) => nc.flush()));
    const total = counts.reduce((a, b) => a + b, 0);
    check(total === N, `each message delivered once in total: ${total} of ${N}`);
    check([...seen.values()].every((v) => v === 1) && seen.size === N, "no message delivered twice");
    check(counts.filter((c) => c > 0).length >= 2, `spread over members: ${counts}`);
    record("counts", counts);
    await pub.close();
    await Promise.all(members.map((nc) => nc.close()));
  },

  async request() {
    const svc = await connect(opts());
    svc.subscribe("js.svc.echo", { callback: (err, m) => { if (!err) m.respond(sc.encode("echo:" + sc.decode(m.data))); } });
    await svc.flush();
    const nc = await connect(opts());
    for (let i = 0; i < 20; i++) {
      const r = await nc.request("js.svc.echo", sc.encode(String(i)), { timeout: 2000 });
      check(sc.decode(r.data) === `echo:${i}`, `reply ${i}`);
    }
    // old-style request with an explicit inbox (no mux)
    const r2 = await nc.request("js.svc.echo", sc.encode("x"), { timeout: 2000, noMux: true });
    check(sc.decode(r2.data) === "echo:x", "noMux request");
    // manual inbox
    const inbox = createInbox();
    const sub = nc.subscribe(inbox, { max: 1 });
    nc.publish("js.svc.echo", sc.encode("y"), { reply: inbox });
    const [m] = await collect(sub, 1);
    check(sc.decode(m.data) === "echo:y", "manual inbox reply");
    await nc.close();
    await svc.close();
  },

  async headers() {
    const nc = await connect(opts());
    check(nc.info.headers === true, "server announces headers");
    const sub = nc.subscribe("js.hdr");
    const p = collect(sub, 1);
    await nc.flush();
    const h = headers();
    h.append("X-One", "1");
    h.append("X-Multi", "a");
    h.append("X-Multi", "b");
    nc.publish("js.hdr", sc.encode("body"), { headers: h });
    const [m] = await p;
    check(m.headers && m.headers.get("X-One") === "1", "single header");
    check(m.headers && m.headers.values("X-Multi").join(",") === "a,b", `multi-value header: ${m.headers?.values("X-Multi")}`);
    check(sc.decode(m.data) === "body", "payload with headers");
    // request/reply with headers and a status-less reply
    nc.subscribe("js.hdr.svc", { callback: (err, msg) => { const rh = headers(); rh.set("Reply", "yes"); msg.respond(msg.data, { headers: rh }); } });
    const r = await nc.request("js.hdr.svc", sc.encode("q"), { timeout: 2000, headers: h });
    check(r.headers?.get("Reply") === "yes", "reply headers");
    await nc.close();
  },

  async noresponders() {
    const nc = await connect(opts());
    const err = await caught(() => nc.request("js.nobody.home", sc.encode("?"), { timeout: 2000 }));
    check(err !== null, "request without responders throws");
    check(err && err.code === ErrorCode.NoResponders && err.code === "503", `error code 503, got ${err && err.code}`);
    const err2 = await caught(() => nc.request("js.nobody.home", sc.encode("?"), { timeout: 2000, noMux: true }));
    check(err2 && err2.code === "503", `noMux request: code 503, got ${err2 && err2.code}`);
    await nc.close();
  },

  async verbose() {
    const nc = await connect(opts({ verbose: true, pedantic: true }));
    const sub = nc.subscribe("js.vb");
    const p = collect(sub, 2);
    nc.publish("js.vb", sc.encode("1"));
    nc.publish("js.vb", sc.encode("2"));
    await nc.flush();
    const got = await p;
    check(got.length === 2, "verbose connection still delivers");
    const rtt = await nc.rtt();
    check(rtt >= 0, "rtt on verbose connection");
    check(!nc.isClosed(), "verbose +OK lines do not break the client");
    await nc.close();
  },

  async echo() {
    const self = await connect(opts({ noEcho: true }));
    const other = await connect(opts());
    let own = 0;
    const fromOther = [];
    self.subscribe("js.echo", { callback: (err, m) => { if (sc.decode(m.data) === "self") own++; else fromOther.push(m); } });
    const otherSub = other.subscribe("js.echo");
    const po = collect(otherSub, 1);
    await self.flush();
    await other.flush();
    self.publish("js.echo", sc.encode("self"));
    await self.flush();
    const [o] = await po;
    check(sc.decode(o.data) === "self", "other connection receives it");
    other.publish("js.echo", sc.encode("other"));
    await other.flush();
    await within(3000, (async () => { while (fromOther.length < 1) await delay(10); })(), "message from other connection");
    await self.flush();
    check(own === 0, `noEcho: own messages suppressed (got ${own})`);
    await self.close();
    await other.close();
  },
};

const name = process.env.CASE;
await scenario(async () => {
  if (!cases[name]) throw new Error(`unknown CASE ${name}`);
  await cases[name]();
});
