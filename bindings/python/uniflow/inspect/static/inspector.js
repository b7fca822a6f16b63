// The uniflow inspector's page: no framework, no build step, no network access
// beyond this server. Everything shown from the model is set as text, never as HTML.
"use strict";

(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const LOG_LIMIT = 500;

  const $ = (id) => document.getElementById(id);
  const ui = {
    source: $("source"), warning: $("warning"), connection: $("connection"), model: $("model"), timers: $("timers"),
    graph: $("graph"), log: $("log"), filter: $("filter"), filterError: $("filter-error"),
    time: $("time"), timeLabel: $("time-label"), live: $("time-live"),
    submit: $("submit"), submitAction: $("submit-action"), submitStatus: $("submit-status"),
  };

  const view = {
    info: null,         // /api/info: features, seqs, allow_submit
    generation: null,
    liveModel: {},
    at: null,           // null: live; else the seq shown
    lastSeq: 0,         // the newest seq the log has seen
    filter: "",         // the filter the log shows ("" for none)
    timers: [],
    timersAt: 0,        // when the timers were read (performance.now())
    shown: {},          // data-testid -> JSON of what the card shows (to highlight changes)
    rendered: false,    // whether a model was shown yet (the first one highlights nothing)
    changedAt: {},      // data-testid -> when it last changed (performance.now())
    request: 0,         // the latest time-travel request (older answers are ignored)
  };

  function url(path, params) {
    const u = new URL(path, location.href);
    u.search = "";
    u.searchParams.set("token", token);
    for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined) u.searchParams.set(k, v);
    return u.toString();
  }

  async function getJSON(path, params) {
    const r = await fetch(url(path, params), { cache: "no-store" });
    let body = null;
    try { body = await r.json(); } catch (e) { body = { error: r.statusText }; }
    return { ok: r.ok, status: r.status, body: body };
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  // -- the model --------------------------------------------------------------------

  function card(testid, name, value) {
    const c = el("div", "card");
    c.dataset.testid = testid;
    const head = el("div");
    head.append(el("span", "name", name), el("span", "state", value.state));
    c.append(head);
    const keys = Object.keys(value.payload || {});
    if (keys.length) c.append(el("pre", "payload", JSON.stringify(value.payload, null, 1)));
    const text = JSON.stringify(value);
    // New or changed: highlighted for 2 s, across the renders of that time.
    if (view.rendered && view.shown[testid] !== text) view.changedAt[testid] = performance.now();
    if (performance.now() - (view.changedAt[testid] || -1e9) < 2000) c.classList.add("changed");
    view.shown[testid] = text;
    return c;
  }

  function renderModel(model) {
    const features = (view.info && view.info.features) || [];
    const names = features.map((f) => f.feature);
    for (const name of Object.keys(model)) if (!names.includes(name)) names.push(name);
    const keyed = new Set(features.filter((f) => f.keyed).map((f) => f.feature));
    const out = [];
    for (const name of names) {
      const value = model[name];
      if (value === undefined) continue;
      if (keyed.has(name)) {
        const group = el("div", "group");
        group.append(el("div", "name", name + " (" + Object.keys(value).length + ")"));
        for (const [key, instance] of Object.entries(value)) group.append(card("feature-" + name + "[" + key + "]", "[" + key + "]", instance));
        out.push(group);
      } else {
        out.push(card("feature-" + name, name, value));
      }
    }
    if (!out.length) out.push(el("div", "empty", "no feature is initialized"));
    ui.model.replaceChildren(...out);
    view.rendered = true;
  }

  // -- the log ----------------------------------------------------------------------

  function payloadChanges(m) {
    const before = (m.old && m.old.payload) || {};
    const after = (m.new && m.new.payload) || {};
    const parts = [];
    for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
      const a = JSON.stringify(before[k]), b = JSON.stringify(after[k]);
      if (a === b) continue;
      if (a === undefined) parts.push(k + ": " + b);
      else if (b === undefined) parts.push(k + ": " + a + " → (gone)");
      else parts.push(k + ": " + a + " → " + b);
    }
    return parts.join(", ");
  }

  function row(m, fresh) {
    const tr = el("tr", fresh ? "fresh" : "");
    tr.dataset.testid = "mutation";
    tr.dataset.seq = m.seq;
    const place = m.feature + (m.key !== undefined && m.key !== null ? "[" + m.key + "]" : "");
    const move = (m.old ? m.old.state : "–") + " → " + (m.new ? m.new.state : "–");
    for (const text of [m.seq, place, m.kind, move, payloadChanges(m)]) tr.append(el("td", "", String(text)));
    return tr;
  }

  function addToLog(mutations, fresh) {
    const rows = [];
    for (let i = mutations.length - 1; i >= 0; i--) rows.push(row(mutations[i], fresh));
    ui.log.prepend(...rows);
    while (ui.log.children.length > LOG_LIMIT) ui.log.lastChild.remove();
  }

  async function reloadLog() {
    const filter = view.filter;
    const r = await getJSON("api/mutations", { filter: filter || null, limit: LOG_LIMIT });
    if (filter !== view.filter) return;
    if (!r.ok) return showFilterError(r.body.error || ("HTTP " + r.status));
    showFilterError(null);
    ui.log.replaceChildren();
    addToLog(r.body, false);
  }

  async function newMutations(mutations, since) {
    if (!mutations.length) return;
    if (!view.filter) return addToLog(mutations, true);
    const filter = view.filter;
    const r = await getJSON("api/mutations", { since: since, filter: filter });
    if (filter === view.filter && r.ok) addToLog(r.body, true);
  }

  function showFilterError(message) {
    ui.filterError.hidden = !message;
    ui.filterError.textContent = message || "";
    ui.filter.classList.toggle("bad", !!message);
  }

  let filterTimer = null;
  function filterChanged() {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      const text = ui.filter.value.trim();
      if (text === view.filter) return;
      view.filter = text;
      reloadLog();
    }, 250);
  }

  // -- the graph --------------------------------------------------------------------

  let graphBusy = false, graphAgain = false;
  async function refreshGraph() {
    if (graphBusy) { graphAgain = true; return; }
    graphBusy = true;
    try {
      do {
        graphAgain = false;
        const r = await fetch(url("api/graph.svg", { at: view.at }), { cache: "no-store" });
        const text = await r.text();
        if (!r.ok) {
          let message = text;
          try { message = JSON.parse(text).error; } catch (e) { /* the text as it is */ }
          ui.graph.replaceChildren(el("div", "empty", message));
          continue;
        }
        const doc = new DOMParser().parseFromString(text, "image/svg+xml");
        const svg = doc.documentElement;
        for (const s of svg.querySelectorAll("script, foreignObject")) s.remove();
        ui.graph.replaceChildren(document.importNode(svg, true));
      } while (graphAgain);
    } finally {
      graphBusy = false;
    }
  }

  // -- timers -----------------------------------------------------------------------

  function setTimers(timers) {
    view.timers = timers || [];
    view.timersAt = performance.now();
    renderTimers();
  }

  function renderTimers() {
    // A manual clock stands still between advances: no countdown then.
    const manual = view.info && view.info.clock === "manual";
    const elapsed = manual ? 0 : performance.now() - view.timersAt;
    const items = view.timers.map((t) => {
      const left = Math.max(0, t.due_in_ms - elapsed);
      const li = el("li", "", (t.id === null ? "(anonymous)" : t.id) + " — " + (left / 1000).toFixed(1) + " s of " + (t.ms / 1000) + " s" + (manual ? " (manual clock)" : ""));
      li.dataset.testid = "timer";
      return li;
    });
    if (!items.length) items.push(el("li", "empty", "none"));
    ui.timers.replaceChildren(...items);
  }

  // -- time travel ------------------------------------------------------------------

  function setRange(first, last) {
    // No seq yet (a host's inspector before its first mutation): nothing to travel to.
    ui.time.disabled = first === null;
    ui.time.min = first === null ? 0 : first;
    ui.time.max = last === null ? 0 : last;
    if (view.at === null) ui.time.value = ui.time.max;
  }

  async function travel(seq) {
    const request = ++view.request;
    view.at = seq;
    document.body.classList.add("past");
    ui.timeLabel.textContent = "after seq " + seq;
    const r = await getJSON("api/model", { at: seq });
    if (request !== view.request || view.at !== seq) return;
    if (!r.ok) { ui.timeLabel.textContent = r.body.error || ("HTTP " + r.status); return; }
    renderModel(r.body);
    refreshGraph();
  }

  function goLive() {
    view.request++;
    view.at = null;
    document.body.classList.remove("past");
    ui.timeLabel.textContent = "live";
    ui.time.value = ui.time.max;
    renderModel(view.liveModel);
    refreshGraph();
  }

  // -- submitting -------------------------------------------------------------------

  async function submit(event) {
    event.preventDefault();
    ui.submitStatus.textContent = "…";
    ui.submitStatus.classList.remove("bad");
    try {
      const r = await fetch(url("api/submit"), {
        method: "POST", cache: "no-store",
        headers: { "Content-Type": "application/json", "Authorization": "Bearer " + token },
        body: ui.submitAction.value,
      });
      const body = await r.json();
      const status = body.status || ("HTTP " + r.status);
      const message = body.message || body.error || "";
      ui.submitStatus.textContent = status + (message ? ": " + message : "") + (body.trial ? " (tried on a copy of the model)" : "");
      ui.submitStatus.classList.toggle("bad", !r.ok);
    } catch (e) {
      ui.submitStatus.textContent = String(e);
      ui.submitStatus.classList.add("bad");
    }
  }

  // -- live -------------------------------------------------------------------------

  function onChange(data) {
    view.info = data;
    const since = view.lastSeq;
    const reset = data.reset || data.generation !== view.generation;
    view.generation = data.generation;
    view.liveModel = data.model;
    ui.source.textContent = data.source === "journal" ? "following a journal" : "serving a dispatcher";
    ui.submit.hidden = !data.allow_submit;
    ui.warning.hidden = !data.warning;
    ui.warning.textContent = data.warning || "";
    setRange(data.first_seq, data.last_seq);
    if (reset) {
      view.shown = {};
      view.rendered = false;
      if (view.at !== null) goLive();
      if (view.filter) reloadLog();
      else { ui.log.replaceChildren(); addToLog(data.mutations, false); }
    } else {
      newMutations(data.mutations, since);
    }
    if (data.mutations.length) view.lastSeq = data.mutations[data.mutations.length - 1].seq;
    else if (reset) view.lastSeq = data.last_seq === null ? -1 : data.last_seq;
    setTimers(data.timers);
    if (view.at === null) { renderModel(data.model); refreshGraph(); }
  }

  function connect() {
    const events = new EventSource(url("api/events"));
    events.addEventListener("open", () => { ui.connection.textContent = "live"; ui.connection.className = "online"; });
    events.addEventListener("error", () => { ui.connection.textContent = "reconnecting…"; ui.connection.className = "offline"; });
    events.addEventListener("change", (e) => onChange(JSON.parse(e.data)));
    events.addEventListener("timers", (e) => setTimers(JSON.parse(e.data)));
    events.addEventListener("failure", (e) => { ui.warning.hidden = false; ui.warning.textContent = JSON.parse(e.data); });
  }

  ui.filter.addEventListener("input", filterChanged);
  ui.filter.addEventListener("change", filterChanged);
  ui.filter.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); filterChanged(); } });
  ui.time.addEventListener("input", () => travel(Number(ui.time.value)));
  ui.live.addEventListener("click", goLive);
  ui.submit.addEventListener("submit", submit);
  setInterval(renderTimers, 250);
  connect();
})();
