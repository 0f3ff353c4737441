// TLS through nats.js (node transport). CASE selects the scenario; CA_FILE / CERT_FILE / KEY_FILE are the test PKI.
//   info-first:      INFO in plaintext, then the upgrade; pub/sub (small and 1 MB, several TLS records), request/reply.
//   handshake-first: TLS before INFO (tls { handshake_first: true }).
//   mtls:            tls { verify: true }: refused without a client certificate, served with one.
import { connect, StringCodec } from "nats";
import { scenario, servers, check, caught, record } from "./lib.mjs";

const sc = StringCodec();
const tlsOpts = (extra = {}) => ({ caFile: process.env.CA_FILE, ...extra });
const open = (tls) => connect({ servers: servers(), reconnect: false, timeout: 10000, tls });

async function exercise(nc) {
  check(nc.info && nc.info.tls_required === true, `INFO tls_required: ${nc.info && nc.info.tls_required}`);
  const sub = nc.subscribe("tls.js.>", { max: 2 });
  const got = [];
  const done = (async () => { for await (const m of sub) got.push(m.data); })();
  nc.publish("tls.js.small", sc.encode("hello over tls"));
  const big = new Uint8Array(1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = i % 251;
  nc.publish("tls.js.big", big);
  await done;
  check(got.length === 2 && sc.decode(got[0]) === "hello over tls", "small message round trip");
  check(got.length === 2 && got[1].length === big.length && got[1].every((b, i) => b === i % 251), "1 MB message intact");

  const svc = nc.subscribe("tls.js.svc");
  (async () => { for await (const m of svc) m.respond(sc.encode("re:" + sc.decode(m.data))); })();
  const reply = await nc.request("tls.js.svc", sc.encode("ping"), { timeout: 5000 });
  check(sc.decode(reply.data) === "re:ping", "request/reply over tls");
  await nc.flush();
}

await scenario(async () => {
  const which = process.env.CASE;
  record("case", which);
  if (which === "info-first") {
    const nc = await open(tlsOpts());
    await exercise(nc);
    await nc.close();
  } else if (which === "handshake-first") {
    const nc = await open(tlsOpts({ handshakeFirst: true }));
    await exercise(nc);
    await nc.close();
  } else if (which === "mtls") {
    const refused = await caught(async () => { const c = await open(tlsOpts()); await c.flush(); await c.close(); });
    check(refused !== null, "refused without a client certificate");
    const nc = await open(tlsOpts({ certFile: process.env.CERT_FILE, keyFile: process.env.KEY_FILE }));
    await exercise(nc);
    await nc.close();
  } else {
    check(false, `unknown CASE ${which}`);
  }
});
