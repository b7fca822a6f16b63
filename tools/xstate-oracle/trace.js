#!/usr/bin/env node
// XState v5 trace oracle for libuniflow statecharts.
//
// Runs every machine of a golden corpus through a real XState v5 build and
// writes, for every trace, what XState did after each step (configuration,
// status, context, actions run, guards consulted).  Plain CommonJS, no npm
// packages: XState itself is loaded from a bundle given by the caller, so that
// nothing of XState is kept in this repository.
//
//   XSTATE_BUNDLE=/tmp/xstate/xstate.cjs node tools/xstate-oracle/trace.js \
//       Tests/statecharts/xstate            # rewrite "expected" in place
//   node tools/xstate-oracle/trace.js --bundle B --check DIR...  # compare only
//
// Every *.json file found (recursively) under the given paths is one corpus
// entry; see Tests/statecharts/xstate/README.md for the format.  The machine's
// JSON config is given to XState unchanged, except that the implementations it
// names are supplied here:
//   * guards   `{guard: 'g1'}` / `{guard: {type: 'g1'}}`: each evaluation takes
//              the next boolean of trace.guards.g1; false once the list is spent.
//   * actions  every named action only records its name (no side effects), so
//              context never changes.
//   * actors   every `invoke.src` is a `fromPromise` actor that stays pending
//              until a `{"resolve": src, "output": v}` or
//              `{"reject": src, "error": v}` step settles it (the most recently
//              started, still running instance of that src).
//   * delays   named delays come from entry.delays (ms); numeric ones are used
//              as they are.  Time is XState's SimulatedClock, moved only by
//              `{"advance": ms}` steps.
'use strict';

const fs = require('fs');
const path = require('path');

function usage(msg) {
  if (msg) process.stderr.write(msg + '\n');
  process.stderr.write(
    'usage: trace.js [--bundle PATH] [--check] [--quiet] CORPUS_DIR_OR_FILE...\n' +
      '       (or set XSTATE_BUNDLE to the XState v5 CommonJS bundle)\n'
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { bundle: process.env.XSTATE_BUNDLE, check: false, quiet: false, paths: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bundle') opts.bundle = argv[++i];
    else if (a.startsWith('--bundle=')) opts.bundle = a.slice(9);
    else if (a === '--check') opts.check = true;
    else if (a === '--quiet') opts.quiet = true;
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('-')) usage('unknown option ' + a);
    else opts.paths.push(a);
  }
  if (!opts.bundle) usage('no XState bundle given');
  if (opts.paths.length === 0) usage('no corpus given');
  return opts;
}

function listJson(p) {
  const st = fs.statSync(p);
  if (st.isFile()) return p.endsWith('.json') ? [p] : [];
  const out = [];
  for (const name of fs.readdirSync(p).sort()) out.push(...listJson(path.join(p, name)));
  return out;
}

// ---------------------------------------------------------------- machine scan

// Names of the guards, actions, actors and delays a JSON machine config uses.
function scanImplementations(config) {
  const guards = new Set();
  const actions = new Set();
  const actors = new Set();
  const delays = new Set();
  const addActions = (a) => {
    if (a === undefined) return;
    for (const x of Array.isArray(a) ? a : [a]) {
      if (typeof x === 'string') actions.add(x);
      else if (x && typeof x === 'object' && typeof x.type === 'string') actions.add(x.type);
    }
  };
  const addGuard = (g) => {
    if (g === undefined) return;
    if (typeof g === 'string') guards.add(g);
    else if (g && typeof g.type === 'string') guards.add(g.type);
  };
  const addTransitions = (t) => {
    if (t === undefined) return;
    for (const x of Array.isArray(t) ? t : [t]) {
      if (x && typeof x === 'object') {
        addGuard(x.guard);
        addActions(x.actions);
      }
    }
  };
  const visit = (node) => {
    addActions(node.entry);
    addActions(node.exit);
    if (node.on) for (const k of Object.keys(node.on)) addTransitions(node.on[k]);
    addTransitions(node.always);
    addTransitions(node.onDone);
    if (node.after) {
      for (const k of Object.keys(node.after)) {
        if (!/^\d+$/.test(k)) delays.add(k);
        addTransitions(node.after[k]);
      }
    }
    if (node.invoke) {
      for (const inv of Array.isArray(node.invoke) ? node.invoke : [node.invoke]) {
        if (typeof inv.src === 'string') actors.add(inv.src);
        addTransitions(inv.onDone);
        addTransitions(inv.onError);
        addTransitions(inv.onSnapshot);
      }
    }
    if (node.states) for (const k of Object.keys(node.states)) visit(node.states[k]);
  };
  visit(config);
  return {
    guards: [...guards].sort(),
    actions: [...actions].sort(),
    actors: [...actors].sort(),
    delays: [...delays].sort()
  };
}

// ------------------------------------------------------------- configuration

// Active atomic states, in document order, as dotted paths from the root
// (the root's own id is left out), derived from snapshot.value.
function configurationFromValue(root, value) {
  const out = [];
  const walk = (node, v, prefix) => {
    const kids = Object.keys(node.states || {}).filter((k) => node.states[k].type !== 'history');
    if (kids.length === 0) {
      out.push(prefix.join('.'));
      return;
    }
    if (node.type === 'parallel') {
      for (const k of kids) walk(node.states[k], v ? v[k] : undefined, prefix.concat(k));
      return;
    }
    let key;
    let sub;
    if (typeof v === 'string') key = v;
    else if (v && typeof v === 'object' && Object.keys(v).length === 1) {
      key = Object.keys(v)[0];
      sub = v[key];
    } else throw new Error('cannot read value ' + JSON.stringify(v) + ' at ' + (prefix.join('.') || '(root)'));
    if (!node.states[key]) throw new Error('value names unknown state ' + key);
    walk(node.states[key], sub, prefix.concat(key));
  };
  walk(root, value, []);
  return out;
}

// The same from XState's own active-node set, as a cross-check.
function configurationFromNodes(snapshot) {
  const nodes = (snapshot._nodes || []).filter((n) => n.type === 'atomic' || n.type === 'final');
  nodes.sort((a, b) => a.order - b.order);
  return nodes.map((n) => n.path.join('.'));
}

// ----------------------------------------------------------------- one trace

function plain(v) {
  if (v === undefined) return null;
  if (v instanceof Error) return { error: v.message };
  try {
    return JSON.parse(JSON.stringify(v));
  } catch (e) {
    return String(v);
  }
}

const tick = () => new Promise((r) => setImmediate(r));

async function runTrace(X, entry, trace) {
  const impl = scanImplementations(entry.machine);
  const log = { actions: [], guardCalls: [], runaway: false };
  // A machine that loops without end inside one step shows up as an endless
  // stream of actions or guard calls; stop it rather than run out of memory.
  const LIMIT = 20000;
  const checkRunaway = () => {
    if (log.actions.length + log.guardCalls.length > LIMIT) {
      log.runaway = true;
      throw new Error('runaway step');
    }
  };
  const guardCursor = {};
  const answers = trace.guards || {};
  const guards = {};
  for (const g of impl.guards) {
    guardCursor[g] = 0;
    guards[g] = () => {
      const list = answers[g] || [];
      const i = guardCursor[g]++;
      const ans = i < list.length ? !!list[i] : false;
      log.guardCalls.push([g, ans]);
      checkRunaway();
      return ans;
    };
  }
  const actions = {};
  for (const a of impl.actions) {
    actions[a] = () => {
      log.actions.push(a);
      checkRunaway();
    };
  }
  const pending = {}; // src -> [{ref, resolve, reject}]
  const actors = {};
  for (const src of impl.actors) {
    pending[src] = [];
    actors[src] = X.fromPromise(
      ({ self }) =>
        new Promise((resolve, reject) => {
          pending[src].push({ self, resolve, reject });
        })
    );
  }
  const delays = {};
  for (const d of impl.delays) {
    const ms = entry.delays && entry.delays[d];
    if (typeof ms !== 'number') throw new Error('delay ' + d + ' has no value in entry.delays');
    delays[d] = ms;
  }

  const expected = [];
  let machine;
  try {
    machine = X.setup({ guards, actions, actors, delays }).createMachine(entry.machine);
  } catch (e) {
    return [{ step: 'create', error: String(e && e.message ? e.message : e) }];
  }
  const clock = new X.SimulatedClock();
  const warnings = [];
  const origWarn = console.warn;
  const origError = console.error;
  console.warn = (...a) => warnings.push(a.join(' '));
  console.error = (...a) => warnings.push(a.join(' '));
  let actor;
  try {
    actor = X.createActor(machine, { clock });
    actor.subscribe({ error: () => {} }); // keep errors in the snapshot, not thrown
    const record = (step) => {
      if (log.runaway) throw new Error('step ' + step + ' did not settle (more than ' + LIMIT + ' actions/guard calls)');
      const s = actor.getSnapshot();
      const rec = { step };
      const conf2 = configurationFromNodes(s);
      let conf;
      try {
        conf = configurationFromValue(machine.root, s.value);
      } catch (e) {
        conf = null;
      }
      if (!conf || conf.join(',') !== conf2.join(',')) {
        // XState v5 can reach a configuration that is no statechart
        // configuration at all (two active children of one compound state,
        // visible in snapshot.value or only in its active-node set; see the
        // README).  Record what its active nodes are, say so, and
        // stop this trace: nothing after it is meaningful.
        rec.configuration = conf2.join(',');
        rec.status = s.status;
        rec.anomaly = 'illegal configuration; snapshot.value is ' + JSON.stringify(s.value);
        rec.actions = log.actions.splice(0);
        rec.guardCalls = log.guardCalls.splice(0);
        expected.push(rec);
        return false;
      }
      rec.configuration = conf.join(',');
      rec.status = s.status;
      rec.context = plain(s.context);
      if (s.status === 'done') rec.output = plain(s.output);
      if (s.status === 'error') rec.error = s.error instanceof Error ? s.error.message : plain(s.error);
      rec.actions = log.actions.splice(0);
      rec.guardCalls = log.guardCalls.splice(0);
      expected.push(rec);
      return true;
    };
    actor.start();
    await tick();
    if (!record('start')) return expected;
    for (let i = 0; i < trace.steps.length; i++) {
      const st = trace.steps[i];
      if (st.event) {
        actor.send(typeof st.event === 'string' ? { type: st.event } : st.event);
      } else if (st.advance !== undefined) {
        clock.increment(st.advance);
      } else if (st.resolve !== undefined || st.reject !== undefined) {
        const src = st.resolve !== undefined ? st.resolve : st.reject;
        const list = (pending[src] || []).filter((p) => p.self.getSnapshot().status === 'active');
        const p = list[list.length - 1];
        if (p) {
          pending[src] = pending[src].filter((q) => q !== p);
          if (st.resolve !== undefined) p.resolve(st.output === undefined ? null : st.output);
          else p.reject(st.error === undefined ? null : st.error);
        }
      } else {
        throw new Error('step ' + i + ' has no event/advance/resolve/reject');
      }
      await tick();
      await tick();
      if (!record(i)) break;
    }
  } finally {
    if (actor) actor.stop();
    console.warn = origWarn;
    console.error = origError;
  }
  return expected;
}

// --------------------------------------------------------------------- main

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const X = require(path.resolve(opts.bundle));
  for (const k of ['createMachine', 'setup', 'createActor', 'fromPromise', 'SimulatedClock']) {
    if (!X[k]) throw new Error('bundle ' + opts.bundle + ' has no ' + k + ' (not XState v5?)');
  }
  const files = [].concat(...opts.paths.map(listJson));
  let nMachines = 0;
  let nSteps = 0;
  let changed = 0;
  let failed = 0;
  for (const f of files) {
    const text = fs.readFileSync(f, 'utf8');
    const entry = JSON.parse(text);
    if (!entry.machine || !Array.isArray(entry.traces)) continue;
    nMachines++;
    entry.implementations = scanImplementations(entry.machine);
    for (const t of entry.traces) {
      let exp;
      try {
        exp = await runTrace(X, entry, t);
      } catch (e) {
        failed++;
        process.stderr.write(f + ': trace ' + t.name + ': ' + (e && e.stack ? e.stack : e) + '\n');
        continue;
      }
      nSteps += t.steps.length;
      if (JSON.stringify(exp) !== JSON.stringify(t.expected)) {
        changed++;
        if (opts.check) process.stderr.write(f + ': trace ' + t.name + ' differs from XState\n');
      }
      t.expected = exp;
    }
    if (!opts.check) {
      const out = formatEntry(entry);
      if (out !== text) fs.writeFileSync(f, out);
    }
  }
  if (!opts.quiet || changed || failed) {
    process.stderr.write(
      `${nMachines} machines, ${nSteps} steps; ${changed} traces ${opts.check ? 'differ' : 'rewritten'}; ${failed} failed\n`
    );
  }
  process.exit(failed || (opts.check && changed) ? 1 : 0);
}

// Stable, reviewable layout: the fixed keys first, and one line per step of
// each expected trace so that diffs stay small.
function formatEntry(entry) {
  const order = ['id', 'origin', 'licence', 'notes', 'delays', 'implementations', 'machine', 'traces'];
  const e = {};
  for (const k of order) if (entry[k] !== undefined) e[k] = entry[k];
  for (const k of Object.keys(entry)) if (!(k in e)) e[k] = entry[k];
  const traces = e.traces;
  const machine = e.machine;
  e.traces = '__TRACES__';
  e.machine = '__MACHINE__';
  const impl = e.implementations;
  if (impl) e.implementations = '__IMPL__';
  let s = JSON.stringify(e, null, 2);
  s = s.replace('"__MACHINE__"', () => formatNode(machine, '  '));
  if (impl) s = s.replace('"__IMPL__"', () => formatNode(impl, '  '));
  const tr = traces
    .map((t) => {
      const head = Object.assign({}, t);
      delete head.expected;
      delete head.steps;
      const parts = [];
      for (const k of Object.keys(head)) parts.push(`      ${JSON.stringify(k)}: ${JSON.stringify(head[k])}`);
      parts.push('      "steps": [\n' + t.steps.map((x) => '        ' + JSON.stringify(x)).join(',\n') + '\n      ]');
      if (t.expected) {
        parts.push('      "expected": [\n' + t.expected.map((x) => '        ' + JSON.stringify(x)).join(',\n') + '\n      ]');
      }
      return '    {\n' + parts.join(',\n') + '\n    }';
    })
    .join(',\n');
  s = s.replace('"__TRACES__"', '[\n' + tr + '\n  ]');
  return s + '\n';
}

// One line per property of a state node, with its child states nested below:
// readable, and about half the size of fully indented JSON.
function formatNode(node, indent) {
  const inner = indent + '  ';
  const lines = [];
  for (const k of Object.keys(node)) {
    if (k === 'states' && node.states && typeof node.states === 'object') {
      const kids = Object.keys(node.states).map(
        (c) => inner + '  ' + JSON.stringify(c) + ': ' + formatNode(node.states[c], inner + '  ')
      );
      lines.push(inner + '"states": {' + (kids.length ? '\n' + kids.join(',\n') + '\n' + inner + '}' : '}'));
    } else {
      lines.push(inner + JSON.stringify(k) + ': ' + JSON.stringify(node[k]));
    }
  }
  return lines.length ? '{\n' + lines.join(',\n') + '\n' + indent + '}' : '{}';
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write((e && e.stack ? e.stack : String(e)) + '\n');
    process.exit(1);
  });
}

module.exports = { scanImplementations, configurationFromValue, runTrace };
