// Shared helpers for the nats.js scenario scripts run by NatsBroker.Tests (Infrastructure/NodeClient.cs).
// Protocol with the test: JSON lines on stdout. {"event":...} progress events; a final {"done":true,"ok":...}.
// The test may write command lines to stdin (see nextCommand()).
import { createInterface } from "node:readline";

export const servers = () => (process.env.NATS_URL || process.argv[2] || "nats://127.0.0.1:4222").split(",");

const failures = [];
let checks = 0;
const extras = {};

export function emit(event, data = {}) {
  console.log(JSON.stringify({ event, ...data }));
}

export function check(cond, message) {
  checks++;
  if (!cond) failures.push(message);
  return cond;
}

export function record(key, value) {
  extras[key] = value;
}

export const delay = (ms) => new Promise((r) => setTimeout(r, ms));

export async function within(ms, promise, what) {
  let timer;
  const t = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`timeout after ${ms} ms: ${what}`)), ms); });
  try { return await Promise.race([promise, t]); } finally { clearTimeout(timer); }
}

/** Resolves with err (or null when fn did not throw). */
export async function caught(fn) {
  try { await fn(); return null; } catch (e) { return e; }
}

// stdin commands
const pending = [];
const waiters = [];
let rl;
export function nextCommand(timeoutMs = 20000) {
  if (!rl) {
    rl = createInterface({ input: process.stdin });
    rl.on("line", (l) => { const w = waiters.shift(); if (w) w(l.trim()); else pending.push(l.trim()); });
  }
  if (pending.length) return Promise.resolve(pending.shift());
  return within(timeoutMs, new Promise((r) => waiters.push(r)), "command from the test on stdin");
}

/** Runs the scenario, reports {"done":true,...} and exits (a hard bound keeps a hung client from lingering). */
export async function scenario(fn, hardLimitMs = 60000) {
  const guard = setTimeout(() => { failures.push(`scenario exceeded ${hardLimitMs} ms`); finish(); }, hardLimitMs);
  try {
    await fn();
  } catch (e) {
    failures.push(`exception: ${e && (e.code ? e.code + " " : "") + (e.stack || e)}`);
  }
  clearTimeout(guard);
  finish();
}

function finish() {
  console.log(JSON.stringify({ done: true, ok: failures.length === 0, checks, failures, ...extras }));
  if (rl) rl.close();
  process.exit(0);
}
