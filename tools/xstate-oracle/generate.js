#!/usr/bin/env node
// Seeded generator of random statecharts and event sequences for the XState
// oracle (see trace.js and Tests/statecharts/xstate/README.md).
//
//   node tools/xstate-oracle/generate.js machines --seed 1 --count 300 \
//       --out Tests/statecharts/xstate/generated
//       writes gen-0000.json ... : machine + inputs, no "expected" yet
//   node tools/xstate-oracle/generate.js traces --seed 1 [--traces 2] FILE...
//       gives each corpus file that has no traces that many random input traces
//       (used for the hand-converted real machines)
//
// Output depends only on the seed and the arguments (no clock, no
// Math.random).  Names stay within [A-Za-z_][A-Za-z0-9_]*.
'use strict';

const fs = require('fs');
const path = require('path');
const { scanImplementations } = require('./trace.js');

// mulberry32
function rngFrom(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), // inclusive
    chance: (p) => next() < p,
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    sample: (xs, n) => {
      const c = xs.slice();
      const out = [];
      while (out.length < n && c.length) out.push(c.splice(Math.floor(next() * c.length), 1)[0]);
      return out;
    }
  };
  return r;
}

function hashString(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const MAX_DEPTH = 4; // levels of states below the root
const EVENTS = ['E0', 'E1', 'E2', 'E3', 'E4', 'E5'];
const UNHANDLED = ['NOBODY', 'E9'];
const DELAYS = [100, 250, 1000];
const ADVANCES = [50, 100, 150, 250, 1000];

// ------------------------------------------------------------ machine shape

function makeMachine(rng, mid) {
  let counter = 0;
  const info = []; // {path, node, kind, parent}
  const guards = ['g0', 'g1', 'g2', 'g3'];
  const actions = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'];
  const withServices = rng.chance(0.25);

  const newName = () => 'S' + counter++;

  const budget = rng.int(6, 24); // states, so that machines stay readable

  function build(depth, pathSoFar, forceCompound) {
    const node = {};
    let kind;
    if (depth >= MAX_DEPTH || (counter >= budget && !forceCompound)) kind = 'atomic';
    else if (forceCompound) kind = 'compound';
    else {
      const x = rng.next();
      kind = x < 0.45 ? 'atomic' : x < 0.8 ? 'compound' : 'parallel';
      if (depth === 0) kind = x < 0.7 ? 'compound' : 'parallel';
    }
    if (kind === 'compound') {
      const n = rng.int(2, depth <= 1 ? 4 : 3);
      node.states = {};
      const keys = [];
      for (let i = 0; i < n; i++) {
        const k = newName();
        keys.push(k);
        node.states[k] = build(depth + 1, pathSoFar.concat(k), false);
      }
      // a final child; at the root it ends the whole machine (status done)
      if (rng.chance(depth > 0 ? 0.45 : 0.3)) {
        const k = newName();
        node.states[k] = { type: 'final' };
        if (rng.chance(0.3)) node.states[k].entry = [rng.pick(actions)];
        info.push({ path: pathSoFar.concat(k), kind: 'final' });
      }
      if (depth > 0 && rng.chance(0.35)) {
        const k = 'H' + counter++;
        const h = { type: 'history', history: rng.chance(0.5) ? 'deep' : 'shallow' };
        if (rng.chance(0.5)) h.target = rng.pick(keys);
        node.states[k] = h;
        info.push({ path: pathSoFar.concat(k), kind: 'history' });
      }
      node.initial = rng.pick(keys);
    } else if (kind === 'parallel') {
      node.type = 'parallel';
      node.states = {};
      const n = rng.int(2, 3);
      for (let i = 0; i < n; i++) {
        const k = newName();
        node.states[k] = build(depth + 1, pathSoFar.concat(k), depth + 1 < MAX_DEPTH);
      }
    }
    info.push({ path: pathSoFar, node, kind });
    return node;
  }

  const root = build(0, [], true);
  // Targets: every state but the root (history states included).
  const all = info.filter((i) => i.path.length > 0);
  const byPath = new Map(info.map((i) => [i.path.join('.'), i]));
  const ref = (fromPath, toPath) => {
    // sibling: plain key; descendant: ".a.b"; otherwise "#mid.a.b"
    const parent = fromPath.slice(0, -1).join('.');
    if (toPath.length === fromPath.length && toPath.slice(0, -1).join('.') === parent && rng.chance(0.7)) {
      return toPath[toPath.length - 1];
    }
    if (
      toPath.length > fromPath.length &&
      toPath.slice(0, fromPath.length).join('.') === fromPath.join('.') &&
      rng.chance(0.5)
    ) {
      return '.' + toPath.slice(fromPath.length).join('.');
    }
    return '#' + mid + '.' + toPath.join('.');
  };
  const parallels = info.filter((i) => i.kind === 'parallel');

  const maybeActions = (p) => (rng.chance(p) ? rng.sample(actions, rng.int(1, 2)) : undefined);

  // onDone targets: a non-final, non-history state outside the finished
  // node, so that completion can never re-complete itself in a loop.
  const doneTarget = (fromPath) => {
    const inside = (p) => p.length >= fromPath.length && p.slice(0, fromPath.length).join('.') === fromPath.join('.');
    const cands = all.filter((i) => i.kind !== 'final' && i.kind !== 'history' && !inside(i.path));
    return cands.length ? ref(fromPath, rng.pick(cands).path) : undefined;
  };

  const makeTargets = (fromPath, forDone) => {
    const x = rng.next();
    if (x < 0.1) return undefined; // targetless
    if (forDone) return doneTarget(fromPath);
    if (x < 0.2 && parallels.length) {
      // multiple targets in different regions of one parallel state
      const p = rng.pick(parallels);
      const regions = Object.keys(p.node.states);
      const chosen = rng.sample(regions, rng.int(2, regions.length));
      const targets = [];
      for (const r of chosen) {
        const rp = p.path.concat(r);
        const cands = all.filter(
          (i) => i.path.length > rp.length && i.path.slice(0, rp.length).join('.') === rp.join('.')
        );
        if (cands.length) targets.push('#' + mid + '.' + rng.pick(cands).path.join('.'));
      }
      if (targets.length >= 2) return targets;
    }
    const t = rng.pick(all);
    return ref(fromPath, t.path);
  };

  const makeTransition = (fromPath, guarded, forDone) => {
    const t = {};
    const target = makeTargets(fromPath, forDone);
    if (target !== undefined) t.target = target;
    if (guarded) t.guard = rng.chance(0.8) ? rng.pick(guards) : { type: rng.pick(guards) };
    const a = maybeActions(0.4);
    if (a) t.actions = a.length === 1 && rng.chance(0.5) ? a[0] : a;
    if (target !== undefined && rng.chance(0.15)) t.reenter = true;
    if (target === undefined && !t.actions) t.actions = [rng.pick(actions)];
    return t;
  };

  const makeCandidates = (fromPath, mustGuardAll, forDone) => {
    const n = rng.int(1, 3);
    const list = [];
    for (let i = 0; i < n; i++) {
      list.push(makeTransition(fromPath, mustGuardAll || i < n - 1 || rng.chance(0.4), forDone));
    }
    if (list.length === 1 && rng.chance(0.5)) {
      const t = list[0];
      if (Object.keys(t).length === 1 && typeof t.target === 'string') return t.target;
      return t;
    }
    return list;
  };

  for (const i of info) {
    if (i.kind === 'history' || !i.node) continue;
    const node = i.node;
    const e = maybeActions(0.35);
    if (e) node.entry = e;
    const x = maybeActions(0.25);
    if (x) node.exit = x;
    if (i.kind === 'final') continue;
    if (rng.chance(i.path.length === 0 ? 0.5 : 0.75)) {
      node.on = {};
      for (const ev of rng.sample(EVENTS, rng.int(1, 3))) node.on[ev] = makeCandidates(i.path, false);
    }
    if (i.path.length > 0 && rng.chance(0.15)) {
      // eventless transitions are always guarded so that every run ends
      // (guard answers run out and then say false)
      const c = makeCandidates(i.path, true);
      node.always = c;
    }
    if (i.path.length > 0 && rng.chance(0.12)) {
      node.after = {};
      for (const d of rng.sample(DELAYS, rng.int(1, 2))) {
        node.after[String(d)] = rng.chance(0.3) ? makeCandidates(i.path, true) : makeTransition(i.path, false);
      }
    }
    if ((i.kind === 'compound' || i.kind === 'parallel') && i.path.length > 0 && rng.chance(0.6)) {
      node.onDone = rng.chance(0.6) ? makeTransition(i.path, false, true) : makeCandidates(i.path, false, true);
    }
    if (withServices && i.path.length > 0 && i.kind !== 'final' && rng.chance(0.15)) {
      node.invoke = { src: rng.pick(['svc0', 'svc1']) };
      node.invoke.onDone = makeTransition(i.path, false);
      if (rng.chance(0.7)) node.invoke.onError = makeTransition(i.path, false);
    }
  }
  // Put the keys of every node in a fixed, readable order.
  const tidy = (n) => {
    const order = ['type', 'history', 'target', 'initial', 'entry', 'exit', 'invoke', 'on', 'always', 'after', 'onDone', 'states'];
    const o = {};
    for (const k of order) if (n[k] !== undefined) o[k] = n[k];
    if (o.states) for (const k of Object.keys(o.states)) o.states[k] = tidy(o.states[k]);
    return o;
  };
  const m = Object.assign({ id: mid }, tidy(root));
  if (m.type === 'parallel') delete m.initial;
  m.context = {};
  return m;
}

// ------------------------------------------------------------- input traces

function eventsOf(config) {
  const evs = new Set();
  const visit = (n) => {
    if (n.on) for (const k of Object.keys(n.on)) if (k !== '*' && !k.includes('*')) evs.add(k);
    if (n.states) for (const k of Object.keys(n.states)) visit(n.states[k]);
  };
  visit(config);
  return [...evs].sort();
}

function hasAfter(config) {
  let found = false;
  const visit = (n) => {
    if (n.after) found = true;
    if (n.states) for (const k of Object.keys(n.states)) visit(n.states[k]);
  };
  visit(config);
  return found;
}

function makeTrace(rng, config, name, minSteps, maxSteps, eventPayloads) {
  const impl = scanImplementations(config);
  const evs = eventsOf(config);
  const alphabet = evs.concat(UNHANDLED.slice(0, 1));
  const timed = hasAfter(config);
  const n = rng.int(minSteps, maxSteps);
  const steps = [];
  for (let i = 0; i < n; i++) {
    const x = rng.next();
    if (timed && x < 0.12) steps.push({ advance: rng.pick(ADVANCES) });
    else if (impl.actors.length && x < 0.24) {
      const src = rng.pick(impl.actors);
      if (rng.chance(0.85)) steps.push({ resolve: src, output: rng.int(0, 9) });
      else steps.push({ reject: src, error: 'failed' });
    } else {
      const type = rng.pick(alphabet);
      const payload = eventPayloads && eventPayloads[type];
      steps.push({ event: payload ? Object.assign({ type }, payload) : type });
    }
  }
  const guards = {};
  for (const g of impl.guards) {
    const len = rng.int(Math.floor(n / 2), n * 2);
    const list = [];
    for (let i = 0; i < len; i++) list.push(rng.chance(0.5));
    guards[g] = list;
  }
  const t = { name };
  if (impl.guards.length) t.guards = guards;
  t.steps = steps;
  return t;
}

// --------------------------------------------------------------------- main

function parse(argv) {
  const o = { cmd: argv[0], seed: 1, count: 300, traces: 2, out: null, files: [] };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--seed') o.seed = Number(argv[++i]);
    else if (a === '--count') o.count = Number(argv[++i]);
    else if (a === '--out') o.out = argv[++i];
    else if (a === '--traces') o.traces = Number(argv[++i]);
    else o.files.push(a);
  }
  return o;
}

function main() {
  const o = parse(process.argv.slice(2));
  if (o.cmd === 'machines') {
    if (!o.out) throw new Error('--out DIR needed');
    fs.mkdirSync(o.out, { recursive: true });
    for (let k = 0; k < o.count; k++) {
      const rng = rngFrom(hashString('machine:' + o.seed + ':' + k));
      const id = 'gen_' + String(k).padStart(4, '0');
      const machine = makeMachine(rng, id);
      const entry = {
        id,
        origin: { kind: 'generated', generator: 'tools/xstate-oracle/generate.js', seed: o.seed, index: k },
        licence: 'generated by libuniflow; same licence as this repository',
        machine,
        traces: [makeTrace(rng, machine, 't0', 20, 50)]
      };
      fs.writeFileSync(path.join(o.out, id + '.json'), JSON.stringify(entry, null, 2) + '\n');
    }
    process.stderr.write(`wrote ${o.count} machines to ${o.out}\n`);
  } else if (o.cmd === 'traces') {
    for (const f of o.files) {
      const entry = JSON.parse(fs.readFileSync(f, 'utf8'));
      if (entry.traces && entry.traces.length) continue;
      const rng = rngFrom(hashString('traces:' + o.seed + ':' + entry.id));
      entry.traces = [];
      for (let i = 0; i < o.traces; i++) {
        entry.traces.push(makeTrace(rng, entry.machine, 'random' + i, 20, 40, entry.eventPayloads));
      }
      fs.writeFileSync(f, JSON.stringify(entry, null, 2) + '\n');
    }
  } else {
    process.stderr.write('usage: generate.js machines --seed N --count N --out DIR | traces --seed N [--traces N] FILE...\n');
    process.exit(2);
  }
}

if (require.main === module) main();
module.exports = { makeMachine, makeTrace, rngFrom };
