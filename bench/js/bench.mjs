// nats.js load generator for the NatsBroker side-by-side benchmarks.
// NATS.Net is not available from the build machines' NuGet mirror; the official nats.js client stands in for it
// to show what a client-library user sees. Driven by bench/NatsBroker.Bench (NatsJsScenario):
//   node bench.mjs '<json config>'
// Prints "MARK start" / "MARK end" around the timed part (the harness samples the server's CPU there) and one
// final line "RESULT {json}". Warm-up is excluded from timing; every run checks counts and sizes.
import { connect, AckPolicy, DeliverPolicy, StorageType } from "nats";

const cfg = JSON.parse(process.argv[2] ?? "{}");
const url = cfg.url ?? "nats://127.0.0.1:4222";
const size = cfg.size ?? 16;
const n = cfg.msgs ?? 10000;
const runId = cfg.runId ?? String(process.pid);
const payload = new Uint8Array(size);
for (let i = 0; i < size; i++) payload[i] = 97 + (i % 26);

let cpu0, t0;
function markStart() {
  console.log("MARK start");
  cpu0 = process.cpuUsage();
  t0 = process.hrtime.bigint();
}
function markEnd(extra) {
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  console.log("MARK end");
  return { ok: true, elapsedNs: Number(t1 - t0), cpuUs: cpu.user + cpu.system, ...extra };
}
function percentiles(lat) {
  const a = Float64Array.from(lat).sort();
  const p = (q) => (a.length ? a[Math.min(a.length - 1, Math.max(0, Math.ceil((q / 100) * a.length) - 1))] : null);
  return { p50Us: p(50), p95Us: p(95), p99Us: p(99) };
}
class NotSupported extends Error {}
function jsError(e) {
  const s = String(e?.message ?? e);
  if (e?.code === "503" || /503|no responders|timeout|TIMEOUT|jetstream not enabled|not enabled/i.test(s)) {
    return new NotSupported(`JetStream not available: ${s}`);
  }
  return e;
}
const conn = (name) => connect({ servers: url, name, noEcho: false, maxReconnectAttempts: 0, timeout: 5000 });

// ---- core ------------------------------------------------------------------------------------------------
async function pubsub() {
  const pubs = cfg.pubs ?? 1, subsN = cfg.subs ?? 0;
  const subject = `njs.ps.${runId}`;
  const perPub = Math.max(1, Math.floor(n / pubs));
  const warmPerPub = Math.min(Math.max(100, Math.floor(perPub / 5)), 100000);
  const total = perPub * pubs, warmTotal = warmPerPub * pubs;
  const subs = [];
  for (let i = 0; i < subsN; i++) {
    const nc = await conn(`njs-sub${i}`);
    const s = { nc, count: 0, bad: 0, done: null, warm: null, end: 0n };
    s.donePromise = new Promise((r) => (s.done = r));
    s.warmPromise = new Promise((r) => (s.warm = r));
    nc.subscribe(subject, {
      callback: (err, m) => {
        if (err) return;
        if (m.data.length !== size) s.bad++;
        s.count++;
        if (s.count === warmTotal) s.warm();
        if (s.count === warmTotal + total) { s.end = process.hrtime.bigint(); s.done(); }
      },
    });
    await nc.flush();
    subs.push(s);
  }
  const pcs = [];
  for (let i = 0; i < pubs; i++) pcs.push(await conn(`njs-pub${i}`));
  // Flush (PING/PONG) about every 1 MB: bounded buffering, and it lets subscriber callbacks run.
  const flushEvery = Math.min(16384, Math.max(16, Math.floor((1 << 20) / (size + 40))));
  const publish = async (nc, count) => {
    for (let i = 0; i < count; i++) {
      nc.publish(subject, payload);
      if (i % flushEvery === flushEvery - 1) await nc.flush();
    }
    await nc.flush();
  };
  await Promise.all(pcs.map((nc) => publish(nc, warmPerPub)));
  await Promise.all(subs.map((s) => s.warmPromise));
  markStart();
  await Promise.all(pcs.map((nc) => publish(nc, perPub)));
  await Promise.all(subs.map((s) => s.donePromise));
  const res = markEnd({ msgs: total, deliveries: total * subsN });
  if (subs.length) res.elapsedNs = Number(subs.reduce((m, s) => (s.end > m ? s.end : m), 0n) - t0);
  for (const s of subs) {
    if (s.bad) throw new Error(`${s.bad} messages with a wrong size`);
    await s.nc.flush();
    if (s.count !== warmTotal + total) throw new Error(`subscriber got ${s.count}, expected ${warmTotal + total}`);
  }
  await Promise.all([...pcs, ...subs.map((s) => s.nc)].map((nc) => nc.close()));
  return res;
}

async function reqrep() {
  const clients = cfg.clients ?? 1, services = cfg.services ?? 1, queue = cfg.queue ?? false;
  const subject = `njs.rr.${runId}`;
  const scs = [];
  for (let i = 0; i < services; i++) {
    const nc = await conn(`njs-svc${i}`);
    nc.subscribe(subject, { queue: queue ? `q${runId}` : undefined, callback: (err, m) => { if (!err) m.respond(m.data); } });
    await nc.flush();
    scs.push(nc);
  }
  const ccs = [];
  for (let i = 0; i < clients; i++) ccs.push(await conn(`njs-client${i}`));
  const per = Math.max(1, Math.floor(n / clients));
  const warm = Math.min(Math.max(5, Math.floor(per / 5)), 2000);
  const lat = [];
  const run = async (nc, count, record) => {
    for (let i = 0; i < count; i++) {
      const s = process.hrtime.bigint();
      const m = await nc.request(subject, payload, { timeout: 5000 });
      if (m.data.length !== size) throw new Error(`reply ${m.data.length} B, expected ${size} B`);
      if (record) lat.push(Number(process.hrtime.bigint() - s) / 1000);
    }
  };
  await Promise.all(ccs.map((nc) => run(nc, warm, false)));
  markStart();
  await Promise.all(ccs.map((nc) => run(nc, per, true)));
  const res = markEnd({ msgs: per * clients, deliveries: per * clients, ...percentiles(lat) });
  if (lat.length !== per * clients) throw new Error(`${lat.length} replies for ${per * clients} requests`);
  await Promise.all([...ccs, ...scs].map((nc) => nc.close()));
  return res;
}

// ---- JetStream -------------------------------------------------------------------------------------------
async function jsSetup(nc, kind, storage) {
  const stream = `NJS${kind}${runId}`;
  const subject = `njs.${kind.toLowerCase()}.${runId}`;
  let jsm;
  try {
    jsm = await nc.jetstreamManager({ timeout: 3000 });
    await jsm.streams.add({ name: stream, subjects: [subject], storage: storage === "memory" ? StorageType.Memory : StorageType.File, num_replicas: 1 });
  } catch (e) {
    throw jsError(e);
  }
  return { jsm, js: nc.jetstream({ timeout: 5000 }), stream, subject };
}
async function streamCount(jsm, stream, expected) {
  const si = await jsm.streams.info(stream);
  if (si.state.messages !== expected) throw new Error(`stream holds ${si.state.messages} messages, expected ${expected}`);
}
// Sliding window of `window` publishes awaiting their PubAck.
async function asyncPublish(js, subject, count, window) {
  const ring = new Array(window);
  for (let i = 0; i < count; i++) {
    const slot = i % window;
    if (ring[slot]) await ring[slot];
    ring[slot] = js.publish(subject, payload);
  }
  await Promise.all(ring.filter(Boolean));
}

// Untimed fill of a stream: core publishes (the stream captures its subject), then wait for the stream count.
async function prefill(nc, jsm, stream, subject, count) {
  const flushEvery = 8192;
  for (let i = 0; i < count; i++) {
    nc.publish(subject, payload);
    if (i % flushEvery === flushEvery - 1) await nc.flush();
  }
  await nc.flush();
  const deadline = Date.now() + 20000;
  for (;;) {
    const si = await jsm.streams.info(stream);
    if (si.state.messages === count) return;
    if (si.state.messages > count || Date.now() > deadline) throw new Error(`stream holds ${si.state.messages} messages after filling ${count}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function jsSyncPub() {
  const nc = await conn("njs-js-sync");
  const { jsm, js, stream, subject } = await jsSetup(nc, "SP", cfg.storage ?? "memory");
  const warm = Math.min(Math.max(10, Math.floor(n / 5)), 2000);
  for (let i = 0; i < warm; i++) await js.publish(subject, payload);
  const lat = [];
  markStart();
  for (let i = 0; i < n; i++) {
    const s = process.hrtime.bigint();
    await js.publish(subject, payload);
    lat.push(Number(process.hrtime.bigint() - s) / 1000);
  }
  const res = markEnd({ msgs: n, ...percentiles(lat) });
  await streamCount(jsm, stream, warm + n);
  await nc.close();
  return res;
}

async function jsAsyncPub() {
  const nc = await conn("njs-js-async");
  const { jsm, js, stream, subject } = await jsSetup(nc, "AP", cfg.storage ?? "file");
  const warm = Math.min(Math.max(100, Math.floor(n / 5)), 20000);
  await asyncPublish(js, subject, warm, 256);
  markStart();
  await asyncPublish(js, subject, n, 256);
  const res = markEnd({ msgs: n });
  await streamCount(jsm, stream, warm + n);
  await nc.close();
  return res;
}

async function jsOrdered() {
  const nc = await conn("njs-js-ordered");
  const { jsm, js, stream, subject } = await jsSetup(nc, "OC", "file");
  await prefill(nc, jsm, stream, subject, n);
  const readAll = async (count) => {
    const c = await js.consumers.get(stream); // ordered consumer
    const iter = await c.consume({ max_messages: 1000 });
    let got = 0;
    for await (const m of iter) {
      if (m.data.length !== size) throw new Error(`payload ${m.data.length} B, expected ${size} B`);
      if (++got >= count) break;
    }
    return got;
  };
  await readAll(Math.min(n, Math.max(100, Math.floor(n / 5)))); // warm-up pass over the head
  markStart();
  const got = await readAll(n);
  const res = markEnd({ msgs: got, deliveries: got });
  await nc.close();
  return res;
}

async function jsFetch() {
  const nc = await conn("njs-js-fetch");
  const { jsm, js, stream, subject } = await jsSetup(nc, "PF", "file");
  const warm = Math.min(Math.max(500, Math.floor(n / 5)), 50000);
  await prefill(nc, jsm, stream, subject, warm + n);
  await jsm.consumers.add(stream, { durable_name: "bench", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, max_ack_pending: 20000 });
  const c = await js.consumers.get(stream, "bench");
  const fetchN = async (count) => {
    let got = 0;
    while (got < count) {
      const iter = await c.fetch({ max_messages: Math.min(500, count - got), expires: 5000 });
      let inBatch = 0;
      for await (const m of iter) {
        if (m.data.length !== size) throw new Error(`payload ${m.data.length} B, expected ${size} B`);
        m.ack();
        inBatch++;
      }
      if (inBatch === 0) throw new Error(`fetch returned nothing after ${got} of ${count}`);
      got += inBatch;
    }
    return got;
  };
  await fetchN(warm);
  markStart();
  const got = await fetchN(n);
  const res = markEnd({ msgs: got, deliveries: got });
  await nc.flush();
  await nc.close();
  return res;
}

const kinds = { pubsub, reqrep, "js-syncpub": jsSyncPub, "js-asyncpub": jsAsyncPub, "js-ordered": jsOrdered, "js-fetch": jsFetch };
const timer = setTimeout(() => {
  console.log("RESULT " + JSON.stringify({ ok: false, error: `nats.js run exceeded ${cfg.timeoutMs ?? 60000} ms` }));
  process.exit(4);
}, cfg.timeoutMs ?? 60000);
try {
  const f = kinds[cfg.kind];
  if (!f) throw new Error(`unknown kind ${cfg.kind}`);
  const r = await f();
  console.log("RESULT " + JSON.stringify(r));
  clearTimeout(timer);
  process.exit(0);
} catch (e) {
  const ns = e instanceof NotSupported;
  console.log("RESULT " + JSON.stringify({ ok: false, notSupported: ns, error: String(e?.message ?? e) }));
  clearTimeout(timer);
  process.exit(ns ? 0 : 3);
}
