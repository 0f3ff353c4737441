// JetStream features nats.js 3.x enables only for servers that announce 2.11+ or 2.14+ in INFO (nats-core's
// semver.ts Features: batch direct get and priority groups from 2.11.0, consumer reset from 2.14.0). Run against
// ours and nats-server 2.14.5; the test compares the figures recorded here.
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy } from "@nats-io/jetstream";
import { scenario, servers, check, record, caught } from "./lib.mjs";

const enc = new TextEncoder();
const dec = new TextDecoder();

await scenario(async () => {
  const nc = await connect({ servers: servers(), reconnect: false });
  record("version", nc.info.version);
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await jsm.streams.add({ name: "F214", subjects: ["f214.>"], allow_direct: true, storage: "memory" });
  for (let i = 1; i <= 6; i++) await js.publish(`f214.${i % 2 === 0 ? "even" : "odd"}`, enc.encode(`m${i}`));

  // Batch direct get (2.11): three messages from sequence 2.
  const batch = [];
  const iter = await jsm.direct.getBatch("F214", { seq: 2, batch: 3 });
  for await (const m of iter) batch.push(`${m.seq}:${m.subject}:${dec.decode(m.data)}`);
  record("batch", batch);
  check(batch.length === 3, `batch direct get: ${JSON.stringify(batch)}`);

  // Priority groups (2.11): a pinned-client consumer, fetched with its group.
  const ci = await jsm.consumers.add("F214", {
    durable_name: "pg", ack_policy: AckPolicy.Explicit, priority_policy: "pinned_client", priority_groups: ["g"], priority_timeout: 60_000_000_000,
  });
  record("priority", { policy: ci.config.priority_policy, groups: ci.config.priority_groups });
  const c = await js.consumers.get("F214", "pg");
  const got = [];
  for await (const m of await c.fetch({ max_messages: 2, expires: 2000, group: "g" })) {
    got.push(m.seq);
    record("pinned", m.headers?.get("Nats-Pin-Id") ? "has pin id" : "no pin id");
    m.ack();
  }
  record("fetched", got);
  check(got.length === 2, `fetch with a priority group: ${JSON.stringify(got)}`);

  // Consumer reset (2.14, ADR-60): back to sequence 1, then the next fetch starts there again.
  const err = await caught(async () => {
    const r = await jsm.consumers.reset("F214", "pg", 1);
    record("reset", { reset_seq: r.reset_seq ?? null, delivered: r.delivered ?? null, ack_floor: r.ack_floor ?? null, num_pending: r.num_pending ?? null });
  });
  check(err === null, `consumer reset: ${err && err.message}`);
  const again = [];
  for await (const m of await c.fetch({ max_messages: 1, expires: 2000, group: "g" })) { again.push(m.seq); m.ack(); }
  record("after_reset", again);
  await nc.drain();
});
