// JetStream through the official nats.js client: streams, publish, pull consumers, KV and object store.
// CASE selects one scenario.
import { connect, StringCodec, AckPolicy, DeliverPolicy } from "nats";
import { scenario, servers, check, within, caught } from "./lib.mjs";

const sc = StringCodec();
const opts = () => ({ servers: servers(), reconnect: false });

const cases = {
  async streams() {
    const nc = await connect(opts());
    const jsm = await nc.jetstreamManager();
    const si = await jsm.streams.add({ name: "JS1", subjects: ["js1.>"] });
    check(si.config.name === "JS1" && si.config.storage === "file", `stream info ${JSON.stringify(si.config)}`);
    const js = nc.jetstream();
    for (let i = 1; i <= 5; i++) {
      const pa = await js.publish(`js1.${i}`, sc.encode(`m${i}`));
      check(pa.stream === "JS1" && pa.seq === i, `puback ${JSON.stringify(pa)}`);
    }
    const dup = await js.publish("js1.1", sc.encode("again"), { msgID: "id-1" });
    const dup2 = await js.publish("js1.1", sc.encode("again"), { msgID: "id-1" });
    check(!dup.duplicate && dup2.duplicate && dup2.seq === dup.seq, `dedupe ${JSON.stringify(dup2)}`);
    const err = await caught(() => js.publish("js1.x", sc.encode("x"), { expect: { lastSequence: 1 } }));
    check(err && /wrong last sequence/.test(err.message), `expected last sequence error: ${err && err.message}`);
    const info = await jsm.streams.info("JS1");
    check(info.state.messages === 6, `messages ${info.state.messages}`);
    const names = [];
    for await (const n of jsm.streams.names()) names.push(n);
    check(names.length === 1 && names[0] === "JS1", `names ${names}`);
    const missing = await caught(() => jsm.streams.info("NOPE"));
    check(missing && /stream not found/.test(missing.message), `missing stream: ${missing && missing.message}`);
    const m = await jsm.streams.getMessage("JS1", { last_by_subj: "js1.3" });
    check(m.seq === 3 && sc.decode(m.data) === "m3", `get message ${m.seq}`);
    check(await jsm.streams.deleteMessage("JS1", 2), "delete message");
    const pr = await jsm.streams.purge("JS1", { filter: "js1.1" });
    check(pr.purged === 2, `purged ${pr.purged}`);
    check(await jsm.streams.delete("JS1"), "delete stream");
    await nc.drain();
  },

  async consumers() {
    const nc = await connect(opts());
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: "JS2", subjects: ["js2.*"] });
    const js = nc.jetstream();
    for (let i = 0; i < 10; i++) await js.publish(`js2.${i % 2}`, sc.encode(`${i}`));
    await jsm.consumers.add("JS2", { durable_name: "d", ack_policy: AckPolicy.Explicit });
    const c = await js.consumers.get("JS2", "d");
    const got = [];
    const iter = await c.fetch({ max_messages: 6, expires: 2000 });
    for await (const m of iter) { got.push(sc.decode(m.data)); m.ack(); }
    check(got.join(",") === "0,1,2,3,4,5", `fetch ${got}`);
    const m = await c.next({ expires: 2000 });
    check(m && sc.decode(m.data) === "6" && m.info.redeliveryCount === 1, `next ${m && sc.decode(m.data)}`);
    await m.ackAck();
    // Filtered ephemeral starting at the last message of each subject.
    await jsm.consumers.add("JS2", { name: "lps", filter_subject: "js2.1", deliver_policy: DeliverPolicy.LastPerSubject, ack_policy: AckPolicy.None });
    const lps = await js.consumers.get("JS2", "lps");
    const last = await lps.next({ expires: 2000 });
    check(last && sc.decode(last.data) === "9", `last per subject ${last && sc.decode(last.data)}`);
    const ci = await jsm.consumers.info("JS2", "d");
    check(ci.num_pending === 3 && ci.ack_floor.stream_seq === 7, `consumer info pending ${ci.num_pending} floor ${ci.ack_floor.stream_seq}`);
    const ordered = await js.consumers.get("JS2");
    const all = [];
    const oi = await ordered.fetch({ max_messages: 10, expires: 2000 });
    for await (const om of oi) all.push(sc.decode(om.data));
    check(all.length === 10, `ordered consumer read ${all.length}`);
    check(await jsm.consumers.delete("JS2", "d"), "delete consumer");
    await nc.drain();
  },

  async kv() {
    const nc = await connect(opts());
    const js = nc.jetstream();
    const kv = await js.views.kv("cfg", { history: 5 });
    const r1 = await kv.put("color", sc.encode("red"));
    await kv.put("color", sc.encode("blue"));
    const e = await kv.get("color");
    check(e && sc.decode(e.value) === "blue" && e.revision === r1 + 1, `get ${e && sc.decode(e.value)}`);
    const bad = await caught(() => kv.update("color", sc.encode("x"), r1));
    check(bad !== null, "update with a stale revision fails");
    await kv.delete("color");
    const d = await kv.get("color");
    check(d && d.operation === "DEL", `deleted entry ${d && d.operation}`);
    await kv.put("size", sc.encode("L"));
    const keys = [];
    for await (const k of await kv.keys()) keys.push(k);
    check(keys.length === 1 && keys[0] === "size", `keys ${keys}`);
    const h = [];
    for await (const x of await kv.history({ key: "color" })) h.push(x.operation);
    check(h.join(",") === "PUT,PUT,DEL", `history ${h}`);
    const w = await kv.watch({ key: "live" });
    const seen = within(5000, (async () => { for await (const x of w) { if (x.key === "live") return sc.decode(x.value); } })(), "watch update");
    await kv.put("live", sc.encode("now"));
    check((await seen) === "now", "watch saw the put");
    w.stop();
    await nc.drain();
  },

  async objects() {
    const nc = await connect(opts());
    const js = nc.jetstream();
    const os = await js.views.os("files");
    const data = new Uint8Array(300 * 1024).map((_, i) => (i * 7) % 256);
    const info = await os.putBlob({ name: "blob.bin" }, data);
    check(info.size === data.length && info.chunks >= 2, `put ${info.size} in ${info.chunks} chunks`);
    const back = await os.getBlob("blob.bin");
    check(back && back.length === data.length && back.every((v, i) => v === data[i]), "object content intact");
    const list = await os.list();
    check(list.length === 1 && list[0].name === "blob.bin", `list ${list.map((x) => x.name)}`);
    await os.delete("blob.bin");
    check((await os.getBlob("blob.bin")) === null, "deleted object is gone");
    await nc.drain();
  },
};

await scenario(async () => {
  const c = cases[process.env.CASE];
  if (!c) throw new Error(`unknown CASE ${process.env.CASE}`);
  await c();
});
