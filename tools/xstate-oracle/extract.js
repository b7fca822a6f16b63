#!/usr/bin/env node
// Turns the machines of a public XState v5 source file into JSON corpus
// entries for the oracle (Tests/statecharts/xstate/real/).
//
//   node tools/xstate-oracle/extract.js --bundle /tmp/xstate/xstate.cjs \
//       --js /tmp/examples/toggle.js --origin origin.json --out DIR
//
// --js is the source file already compiled to CommonJS (TypeScript compiled
// with any TypeScript-to-JavaScript compiler; imports left external).  The
// file is loaded with `xstate` mapped to a wrapper around the given bundle
// that records every machine created and never starts an actor; every other
// import is an inert stub.  Each machine's config is then written as JSON:
//   * strings, numbers, booleans, targets and structure are kept as they are;
//   * an inline guard function becomes a named guard (`<state>_<event>_guard`),
//     answered by the trace's scripted booleans like every guard;
//   * an inline action function or built-in action object (assign, raise,
//     sendTo, log, enqueueActions, ...) becomes a named, record-only action
//     (`<kind>_<state>`); raise/sendTo/sendParent/emit lose their effect and
//     are listed in the entry's notes;
//   * an inline actor (`src: fromPromise(...)`) becomes a named one;
//     `input` mappers, `output` mappers and non-JSON `meta` are dropped;
//   * a named delay that is a function becomes 1000 ms (noted).
'use strict';

const fs = require('fs');
const path = require('path');
const Module = require('module');

function parse(argv) {
  const o = { bundle: process.env.XSTATE_BUNDLE };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bundle') o.bundle = argv[++i];
    else if (a === '--js') o.js = argv[++i];
    else if (a === '--origin') o.origin = argv[++i];
    else if (a === '--out') o.out = argv[++i];
    else if (a === '--prefix') o.prefix = argv[++i];
    else if (a === '--path-prefix') o.pathPrefix = argv[++i];
    else throw new Error('unknown argument ' + a);
  }
  if (!o.bundle || !o.js || !o.origin || !o.out) {
    throw new Error('usage: extract.js --bundle B --js FILE.js --origin ORIGIN.json --out DIR [--prefix P]');
  }
  return o;
}

function stub() {
  const f = function () {
    return p;
  };
  const p = new Proxy(f, {
    get: (t, k) => (k === Symbol.toPrimitive ? () => '' : k === 'then' ? undefined : k === '__esModule' ? true : p),
    apply: () => p,
    construct: () => p,
    // bundlers wrap CommonJS modules in objects whose prototype is the
    // module: let every name read through them reach the stub too
    getPrototypeOf: () => p
  });
  return p;
}

function loadMachines(bundlePath, jsPath) {
  const X = require(path.resolve(bundlePath));
  const made = [];
  const testPath = [];
  // Bundlers mark each module of a compiled file with a '// path' line; the
  // marker above the line that called createMachine names the source file
  // the machine really comes from (it may be an imported module).
  const jsAbs = path.resolve(jsPath);
  const jsLines = fs.readFileSync(jsAbs, 'utf8').split('\n');
  const sourceOf = () => {
    const stack = String(new Error().stack).split('\n');
    for (const fr of stack) {
      const i = fr.indexOf(jsAbs + ':');
      if (i < 0) continue;
      const line = Number(fr.slice(i + jsAbs.length + 1).split(':')[0]);
      for (let l = line - 1; l >= 0; l--) {
        const m = /^\/\/ (\S+)$/.exec(jsLines[l]);
        if (m) return m[1];
      }
      return undefined;
    }
    return undefined;
  };
  const inertActor = stub();
  const wrapped = Object.assign({}, X, {
    createMachine: (config, impl) => {
      const m = X.createMachine(config, impl);
      m.__test = testPath.join(' > ');
      m.__file = sourceOf();
      made.push(m);
      return m;
    },
    setup: (s) => {
      const r = X.setup(s);
      return Object.assign({}, r, {
        createMachine: (config) => {
          const m = r.createMachine(config);
          m.__test = testPath.join(' > ');
          m.__file = sourceOf();
          made.push(m);
          return m;
        }
      });
    },
    createActor: () => inertActor,
    interpret: () => inertActor
  });
  const origResolve = Module._resolveFilename;
  const origLoad = Module._load;
  // Test files (--test): their imports of XState's own sources ('../src',
  // '../src/index.ts', ...) are the same wrapper, and describe/it/test run
  // their callbacks at once with an inert `expect`, so that every machine a
  // test builds is seen; failures inside tests are ignored.
  const runBody = (name, fn) => {
    if (typeof fn !== 'function') return;
    testPath.push(String(name));
    try {
      const r = fn(stub());
      if (r && typeof r.catch === 'function') r.catch(() => {});
    } catch (e) {
      /* assertion helpers are inert; other failures are not ours */
    }
    testPath.pop();
  };
  const saved = {};
  for (const g of ['describe', 'it', 'test', 'beforeEach', 'afterEach', 'beforeAll', 'afterAll', 'expect', 'vi', 'jest']) {
    saved[g] = global[g];
  }
  const block = (name, fn) => runBody(name, fn);
  for (const k of ['only', 'skip', 'todo', 'concurrent']) block[k] = block;
  block.each = () => block;
  global.describe = block;
  global.it = block;
  global.test = block;
  for (const g of ['beforeEach', 'afterEach', 'beforeAll', 'afterAll']) global[g] = () => {};
  global.expect = stub();
  global.vi = stub();
  global.jest = stub();
  Module._load = function (request, parent, isMain) {
    if (request === 'xstate' || /^(\.\.?\/)+src(\/|$)/.test(request)) {
      if (/^(\.\.?\/)+src\/.+/.test(request) && !/index(\.ts)?$/.test(request)) {
        // a deeper module of XState (e.g. '../src/actions/assign'): the real one
        return Object.assign({}, X, wrapped);
      }
      return wrapped;
    }
    if (request === 'vitest') return { describe: block, it: block, test: block, expect: stub(), vi: stub(), beforeEach() {}, afterEach() {}, beforeAll() {}, afterAll() {} };
    if (!request.startsWith('.') && !request.startsWith('/') && !Module.builtinModules.includes(request)) {
      return stub();
    }
    return origLoad.apply(this, arguments);
  };
  try {
    require(path.resolve(jsPath));
  } finally {
    for (const g of Object.keys(saved)) global[g] = saved[g];
    Module._load = origLoad;
    Module._resolveFilename = origResolve;
  }
  return made;
}

const KEEP_NODE = [
  'id', 'type', 'history', 'target', 'initial', 'context', 'entry', 'exit', 'invoke',
  'on', 'always', 'after', 'onDone', 'states'
];

function convert(machine) {
  const notes = new Set();
  const delays = {};
  const impl = machine.implementations || {};
  const used = new Set();
  const fresh = (base) => {
    let name = base.replace(/[^A-Za-z0-9_]/g, '_');
    if (!/^[A-Za-z_]/.test(name)) name = '_' + name;
    let n = name;
    let i = 2;
    while (used.has(n)) n = name + '_' + i++;
    used.add(n);
    return n;
  };
  const where = (p, ev) => (p.length ? p[p.length - 1] : 'root') + (ev ? '_' + ev : '');

  const action = (a, p, ev) => {
    if (typeof a === 'string') return a;
    // {type: 'name', params}: the named action (params are not used here)
    if (a && typeof a === 'object' && !Array.isArray(a) && typeof a.type === 'string') return a.type;
    if (typeof a === 'function') {
      const t = typeof a.type === 'string' ? a.type.replace(/^xstate\./, '') : 'inline';
      if (/raise|send|emit|forward|spawn|stop|cancel/.test(t)) {
        notes.add(`built-in ${t} action at ${where(p, ev)} is recorded only (its effect is dropped)`);
      } else if (t === 'assign') {
        notes.add('assign actions are recorded only: context stays as declared');
      } else if (t === 'enqueueActions') {
        notes.add(`enqueueActions at ${where(p, ev)} is recorded only`);
      } else if (t === 'inline') {
        notes.add('inline action functions are recorded only, under generated names');
      }
      return fresh(t + '_' + where(p, ev));
    }
    return fresh('action_' + where(p, ev));
  };
  const actions = (a, p, ev) => {
    if (a === undefined) return undefined;
    const list = (Array.isArray(a) ? a : [a]).map((x) => action(x, p, ev));
    return list;
  };
  const guard = (g, p, ev) => {
    if (g === undefined) return undefined;
    if (typeof g === 'string') return g;
    if (typeof g === 'object' && typeof g.type === 'string') return g.type;
    if (typeof g === 'function') {
      notes.add('inline guard functions became named guards answered by the scripted booleans');
      if (g.check || /stateIn|and|or|not/.test(String(g.type || ''))) {
        notes.add(`higher-order guard at ${where(p, ev)} became one scripted guard`);
      }
      return fresh('guard_' + where(p, ev));
    }
    return undefined;
  };
  const transition = (t, p, ev) => {
    if (t === undefined) return undefined;
    if (typeof t === 'string') return t;
    if (Array.isArray(t)) return t.map((x) => transition(x, p, ev));
    const out = {};
    if (t.target !== undefined) out.target = t.target;
    const g = guard(t.guard, p, ev);
    if (g !== undefined) out.guard = g;
    const a = actions(t.actions, p, ev);
    if (a !== undefined) out.actions = a.length === 1 ? a[0] : a;
    if (t.reenter) out.reenter = true;
    if (t.description) out.description = t.description;
    return out;
  };
  const node = (n, p) => {
    const out = {};
    for (const k of KEEP_NODE) {
      const v = n[k];
      if (v === undefined) continue;
      if (k === 'entry' || k === 'exit') out[k] = actions(v, p, k);
      else if (k === 'on') {
        out.on = {};
        for (const ev of Object.keys(v)) out.on[ev] = transition(v[ev], p, ev);
      } else if (k === 'always') out.always = transition(v, p, 'always');
      else if (k === 'onDone') out.onDone = transition(v, p, 'done');
      else if (k === 'after') {
        out.after = {};
        for (const d of Object.keys(v)) {
          if (!/^\d+$/.test(d)) {
            const dv = impl.delays && impl.delays[d];
            delays[d] = typeof dv === 'number' ? dv : 1000;
            if (typeof dv !== 'number') notes.add(`delay ${d} is a function in the original: 1000 ms here`);
          }
          out.after[d] = transition(v[d], p, 'after_' + d);
        }
      } else if (k === 'invoke') {
        const list = (Array.isArray(v) ? v : [v]).map((inv) => {
          const o = {};
          if (typeof inv.src === 'string') o.src = inv.src;
          else {
            o.src = fresh(inv.id || 'actor_' + where(p));
            notes.add(`inline actor at ${where(p)} became the named promise actor ${o.src}`);
          }
          if (inv.id !== undefined) o.id = inv.id;
          for (const tk of ['onDone', 'onError', 'onSnapshot']) {
            if (inv[tk] !== undefined) o[tk] = transition(inv[tk], p, tk);
          }
          if (inv.input !== undefined) notes.add('invoke input mappers are dropped');
          return o;
        });
        out.invoke = list.length === 1 ? list[0] : list;
      } else if (k === 'states') {
        out.states = {};
        for (const c of Object.keys(v)) out.states[c] = node(v[c], p.concat(c));
      } else if (k === 'context') {
        if (typeof v === 'function') {
          try {
            out.context = JSON.parse(JSON.stringify(v({ input: {}, spawn: () => null, self: null })));
          } catch (e) {
            out.context = {};
          }
          notes.add('context factory evaluated with empty input');
        } else out.context = JSON.parse(JSON.stringify(v));
      } else out[k] = v;
    }
    if (n.output !== undefined && typeof n.output === 'function') notes.add('output mappers are dropped');
    return out;
  };
  const cfg = node(machine.config, []);
  return { machine: cfg, delays, notes: [...notes] };
}

function main() {
  const o = parse(process.argv.slice(2));
  const origin = JSON.parse(fs.readFileSync(o.origin, 'utf8'));
  const machines = loadMachines(o.bundle, o.js);
  fs.mkdirSync(o.out, { recursive: true });
  const seen = new Set();
  for (const m of machines) {
    const { machine, delays, notes } = convert(m);
    const base = (o.prefix ? o.prefix + '-' : '') + (machine.id || 'machine');
    let id = base.replace(/[^A-Za-z0-9_.-]/g, '_');
    let i = 2;
    while (seen.has(id)) id = base + '-' + i++;
    seen.add(id);
    const org = Object.assign({}, origin);
    delete org.licence;
    if (m.__test) org.test = m.__test;
    if (o.pathPrefix !== undefined && m.__file && !m.__file.includes('..')) org.path = o.pathPrefix + m.__file;
    const entry = { id, origin: org, licence: origin.licence };
    if (notes.length) entry.notes = notes;
    if (Object.keys(delays).length) entry.delays = delays;
    entry.machine = machine;
    entry.traces = [];
    fs.writeFileSync(path.join(o.out, id + '.json'), JSON.stringify(entry, null, 2) + '\n');
    process.stderr.write('wrote ' + id + '\n');
  }
}

if (require.main === module) {
  main();
  // the loaded file may have left timers running (examples that simulate
  // work); nothing of theirs is wanted once the machines are written
  process.exit(0);
}
module.exports = { convert };
